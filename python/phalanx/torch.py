"""phalanx.torch: where `phalanx.torch.Optimizer` has always been; the class is
`phalanx.Optimizer` (phalanx/optim.py). Import it as `import phalanx.torch` or use
`phalanx.Optimizer`: `from phalanx import torch` would hide the real torch. Importing this
module does not import torch; the first use of Optimizer does."""

from typing import Any

__all__ = ["Optimizer"]


def __getattr__(name: str) -> Any:
    if name == "Optimizer":
        from .optim import Optimizer

        return Optimizer
    raise AttributeError(f"module 'phalanx.torch' has no attribute '{name}'")
