"""phalanx: decentralized, Byzantine-robust gossip for your own training loop.

The C++ core keeps the network, compression, robust mixing, fault handling and metrics; the
script owns the model, its data and its optimizer. One `Peer` per process:

    peer = phalanx.Peer(topology="topologies/complete-10.yaml", config="cfg.yaml", id=3,
                        dimension=n_params, out="runs/x")
    status = peer.exchange(flat_params)   # gossip, robust mix, the mix written back in place

`phalanx.torch.Optimizer` does this for a torch model. `phalanx launch --script` starts one
script per peer of a topology and hands each its place through PHALANX_* environment
variables, read by `Peer.from_env`.
"""

import json
import math
import os
import signal
import sys
import threading

from ._phalanx import CheckpointError, ConfigError, TopologyError
from ._phalanx import Peer as _CorePeer

__all__ = ["Peer", "ConfigError", "TopologyError", "CheckpointError"]


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

    def __init__(self, topology, config, id, dimension, out="", sets=(), attack="", layers=(),
                 rounds=0, resume=False, listen_host="", join_timeout_ms=30000):
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
    def from_env(cls, dimension, layers=(), **overrides):
        """The peer `phalanx launch --script` asked this process to be (PHALANX_TOPOLOGY,
        PHALANX_CONFIG, PHALANX_ID, PHALANX_OUT, PHALANX_SETS as a JSON list, PHALANX_ROUNDS,
        PHALANX_ATTACK); keyword arguments override them."""
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

    def exchange(self, vector, loss=None):
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

    def _exchange_tensor(self, tensor, loss):
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

    def report(self, accuracy, loss):
        """The script's evaluation of the mix `exchange` gave back. On an evaluation round
        (`evaluation_due`: every rounds.eval_every and the last) the node holds the round's
        record for it until the report or the next exchange; otherwise it goes with the next
        round."""
        self._check_open("report")
        self._core.report(float(accuracy), float(loss))

    def close(self):
        """Goodbye to the neighbours; returns once the node has stopped. The peer takes no
        vector after it (RuntimeError)."""
        self._closed = True
        self._core.close()

    def _check_open(self, what):
        if self._closed:
            raise RuntimeError(f"{what}: peer {self.id} is closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    id = property(lambda self: self._core.id)
    peers = property(lambda self: self._core.peers, doc="the topology's node count")
    index = property(lambda self: self._core.index,
                     doc="this node's position in the topology (0 .. peers-1): a data shard")
    dimension = property(lambda self: self._core.dimension)
    role = property(lambda self: self._core.role, doc="honest, vector_attack, silent, ...")
    honest = property(lambda self: self._core.role == "honest")
    rounds = property(lambda self: self._core.rounds)
    rounds_mixed = property(lambda self: self._core.rounds_mixed)
    exchange_mode = property(lambda self: self._core.exchange_mode, doc="model or gradient")
    finished = property(lambda self: self._core.finished)
    evaluation_due = property(lambda self: self._core.evaluation_due,
                              doc="the last mix is of an evaluation round: evaluate, report()")
    status = property(lambda self: self._core.status,
                      doc="running, completed, incomplete (stopped early) or diverged")
    out = property(lambda self: self._core.out)
