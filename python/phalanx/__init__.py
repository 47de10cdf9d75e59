"""phalanx: decentralized, Byzantine-robust gossip for your own training loop.

The C++ core keeps the network, compression, robust mixing, fault handling and metrics; the
script owns the model, its data and its optimizer. One `Peer` per process:

    peer = phalanx.Peer(topology="topologies/complete-10.yaml", config="cfg.yaml", id=3,
                        dimension=n_params, out="runs/x")
    status = peer.exchange(flat_params)   # gossip, robust mix, the mix written back in place

`phalanx.Optimizer` (also `phalanx.torch.Optimizer`) does this for a torch model as a
`torch.optim.Optimizer`. `phalanx launch --script` starts one script per peer of a topology and
hands each its place through PHALANX_* environment variables (and RANK, WORLD_SIZE,
LOCAL_RANK), read by `Peer.from_env`.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
from typing import Any, Iterable, Optional, Sequence, Tuple

from ._phalanx import CheckpointError, ConfigError, TopologyError
from ._phalanx import Peer as _CorePeer
from ._phalanx import __version__

__all__ = ["Peer", "Optimizer", "ConfigError", "TopologyError", "CheckpointError",
           "__version__"]

# The node's errors, named where users catch them (phalanx.ConfigError, not phalanx._phalanx's).
for _error in (CheckpointError, ConfigError, TopologyError):
    _error.__module__ = __name__


def __getattr__(name: str) -> Any:
    # phalanx.Optimizer needs torch; `import phalanx` alone does not.
    if name == "Optimizer":
        from .optim import Optimizer

        return Optimizer
    raise AttributeError(f"module 'phalanx' has no attribute '{name}'")


def _is_torch_tensor(value):
    return type(value).__module__.startswith("torch") and hasattr(value, "is_contiguous")


def _leave_on_sigterm():
    # `phalanx launch` stops its peers with SIGTERM. Python's default would end the process on
    # the spot; as SystemExit it reaches the script's loop (exchange() checks for signals while
    # it waits), so `with Peer(...)` or close() still says Goodbye to the neighbours.
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


class Peer:
    """One peer of a phalanx run: starts the node's transport, round gate, metrics and control
    endpoints on C++ threads and mixes the vectors the script hands to `exchange`.

    topology, config: the YAML files of `phalanx node` (the config's `data` and `model` sections
    are the script's business and are ignored); id: the node id (or "auto"); dimension: the
    length of the flat float32 vector exchanged every round; layers: optional (rows, cols) per
    layer, summing to dimension, for per-layer codecs; out: folder for node-K.jsonl, node-K.log,
    node-K.npy and checkpoints; sets: config overrides "path=value"; attack: run as a Byzantine
    peer; rounds: 0 for rounds.count.
    """

    def __init__(self, topology: str, config: str, id: Any, dimension: int, out: str = "",
                 sets: Iterable[str] = (), attack: str = "",
                 layers: Sequence[Tuple[int, int]] = (), rounds: int = 0, resume: bool = False,
                 listen_host: str = "", join_timeout_ms: int = 30000) -> None:
        if int(dimension) <= 0:
            raise ValueError(f"dimension: expected a positive parameter count, got {dimension}")
        self._core = _CorePeer(str(topology), str(config), str(id), int(dimension), str(out),
                               [str(s) for s in sets], str(attack),
                               [(int(r), int(c)) for r, c in layers], int(rounds), bool(resume),
                               str(listen_host), int(join_timeout_ms))
        self._staging = None  # pinned host memory for CUDA tensors
        self._closed = False
        _leave_on_sigterm()

    @classmethod
    def from_env(cls, dimension: int, layers: Sequence[Tuple[int, int]] = (),
                 **overrides: Any) -> "Peer":
        """The peer `phalanx launch --script` asked this process to be (PHALANX_TOPOLOGY,
        PHALANX_CONFIG, PHALANX_ID, PHALANX_OUT, PHALANX_SETS as a JSON list, PHALANX_ROUNDS,
        PHALANX_ATTACK); keyword arguments override them, except those that are None or ""
        (a script's unset command-line options: the same script runs under launch or alone)."""
        overrides = {k: v for k, v in overrides.items() if v is not None and v != ""}
        missing = [v for v in ("PHALANX_TOPOLOGY", "PHALANX_CONFIG", "PHALANX_ID")
                   if v not in os.environ]
        if missing and not {"topology", "config", "id"} <= overrides.keys():
            raise ValueError("Peer.from_env: not started by `phalanx launch --script` "
                             f"({', '.join(missing)} not set)")
        args = dict(topology=os.environ.get("PHALANX_TOPOLOGY", ""),
                    config=os.environ.get("PHALANX_CONFIG", ""),
                    id=os.environ.get("PHALANX_ID", ""),
                    out=os.environ.get("PHALANX_OUT", ""),
                    sets=json.loads(os.environ.get("PHALANX_SETS", "[]")),
                    attack=os.environ.get("PHALANX_ATTACK", ""),
                    rounds=int(os.environ.get("PHALANX_ROUNDS", "0")),
                    resume=os.environ.get("PHALANX_RESUME", "") == "1")
        args.update(overrides)
        return cls(dimension=dimension, layers=layers, **args)

    def exchange(self, vector: Any, loss: Optional[float] = None) -> str:
        """Gossips this round's vector (a float32 NumPy array or torch tensor of `dimension`
        values) and replaces it with the robust mix. Returns "mixed", "passed" (a Byzantine
        peer: the vector was not used) or "finished" (the run is over; the vector is unchanged).
        Contiguous CPU memory is mixed in place without a copy; a CUDA tensor goes through
        pinned host memory."""
        self._check_open("exchange")
        loss = math.nan if loss is None else float(loss)
        if _is_torch_tensor(vector):
            return self._exchange_tensor(vector, loss)
        return self._core.exchange(vector, loss)

    def _exchange_tensor(self, tensor: Any, loss: float) -> str:
        import torch

        if tensor.dtype != torch.float32:
            raise TypeError(f"exchange: expected a float32 tensor, got {tensor.dtype}")
        if not tensor.is_contiguous():
            raise ValueError("exchange: the tensor is not contiguous (call .contiguous() and "
                             "exchange that buffer)")
        if tensor.numel() != self.dimension:
            raise ValueError(f"exchange: a tensor of {tensor.numel()} values; this peer was "
                             f"made for {self.dimension}")
        if tensor.device.type == "cpu":
            return self._core.exchange(tensor.detach().view(-1).numpy(), loss)
        if self._staging is None or self._staging.numel() != tensor.numel():
            self._staging = torch.empty(tensor.numel(), dtype=torch.float32,
                                        pin_memory=torch.cuda.is_available())
        self._staging.copy_(tensor.detach().view(-1))
        status = self._core.exchange(self._staging.numpy(), loss)
        if status == "mixed":
            tensor.detach().view(-1).copy_(self._staging, non_blocking=False)
        return status

    def report(self, accuracy: Optional[float] = None, loss: Optional[float] = None,
               **metrics: float) -> None:
        """The script's evaluation of the mix `exchange` gave back: accuracy and loss (the
        record's test_accuracy and test_loss; either may be left out) and any metrics of its
        own by name (`perplexity=...`: the record's test_metrics, the summary's and report's
        honest_metrics). On an evaluation round (`evaluation_due`: every rounds.eval_every and
        the last) the node holds the round's record for it until the report or the next
        exchange; otherwise it goes with the next round."""
        self._check_open("report")
        named = []
        for name, value in metrics.items():
            try:
                named.append((name, float(value)))
            except (TypeError, ValueError):
                raise TypeError(f"report: {name} is not a number ({value!r})") from None
        self._core.report(None if accuracy is None else float(accuracy),
                          None if loss is None else float(loss), named)

    def close(self) -> None:
        """Goodbye to the neighbours; returns once the node has stopped. The peer takes no
        vector after it (RuntimeError)."""
        self._closed = True
        self._core.close()

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"{what}: peer {self.id} is closed")

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    @property
    def id(self) -> int:
        """The node id."""
        return self._core.id

    @property
    def peers(self) -> int:
        """The topology's node count."""
        return self._core.peers

    @property
    def index(self) -> int:
        """This node's position in the topology (0 .. peers-1): a data shard."""
        return self._core.index

    @property
    def dimension(self) -> int:
        """The length of the exchanged vector."""
        return self._core.dimension

    @property
    def role(self) -> str:
        """Honest, vector_attack, silent, wire_attack."""
        return self._core.role

    @property
    def rounds(self) -> int:
        """The run's round count."""
        return self._core.rounds

    @property
    def rounds_mixed(self) -> int:
        """Rounds whose mix came back."""
        return self._core.rounds_mixed

    @property
    def exchange_mode(self) -> str:
        """Model or gradient."""
        return self._core.exchange_mode

    @property
    def finished(self) -> bool:
        """The run is over."""
        return self._core.finished

    @property
    def evaluation_due(self) -> bool:
        """The last mix is of an evaluation round: evaluate, report()."""
        return self._core.evaluation_due

    @property
    def status(self) -> str:
        """Running, completed, incomplete (stopped early) or diverged."""
        return self._core.status

    @property
    def out(self) -> str:
        """The run folder (node-K.jsonl, node-K.log, checkpoints)."""
        return self._core.out

    @property
    def honest(self) -> bool:
        """This peer runs the honest rule (not an attack)."""
        return self._core.role == "honest"
