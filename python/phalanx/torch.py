"""phalanx.torch: where `phalanx.torch.Optimizer` has always been; the class is
`phalanx.Optimizer` (phalanx/optim.py). Import it as `import phalanx.torch` or use
`phalanx.Optimizer`: `from phalanx import torch` would hide the real torch."""

from .optim import Optimizer

__all__ = ["Optimizer"]
