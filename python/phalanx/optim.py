"""phalanx.Optimizer: a torch model's training, decentralized and Byzantine-robust.

The parameters it is given are moved into one flat float32 buffer (each becomes a view into
it, so no copy is made per step): that buffer is the vector the peer exchanges. The inner
optimizer steps as usual, and every `every` steps the buffer is exchanged with the peer's
neighbours and replaced by the robust mix:

- exchange: model (MoNNA, ALGORITHMS.md §1): inner step, then exchange the half-step model.
- exchange: gradient: the flat gradient is exchanged and replaced by its robust aggregate
  before the inner step (every step; `every` must be 1).

An outer optimizer (model exchange, `outer_lr`, `outer_momentum`; DiLoCo's, Douillard et al.
2023, over a robust mix instead of an all-reduce): the exchange's mix M is not taken as the new
model; the pseudo-gradient Δ = x_start − M (x_start: the model after the previous exchange)
drives a momentum step from x_start, v = μ·v + Δ, x = x_start − η·(Δ + μ·v) (Nesterov) or
x_start − η·v. η = 1, μ = 0 (the default) is the mix itself. The step is a function of the mix
and of the peer's own history only, so it is as robust as the mix (docs/ALGORITHMS.md §3.7).

With overlap=True (model exchange) the exchange runs on a thread while the next local steps
compute, and its mix lands one exchange late as a correction: the model moves by (mix − the
model that was sent), so the local steps taken meanwhile are kept — delayed parameter averaging,
as hivemind's and the streaming DiLoCo variants do it. It costs two model-sized buffers and two
copies per exchange; the exchange's wait is hidden behind the local steps.

It is a `torch.optim.Optimizer` whose `param_groups` and `state` are the inner optimizer's (as
hivemind's Optimizer does), so learning-rate schedulers, `add_param_group` and frameworks that
check the type work on it.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

import torch

__all__ = ["Optimizer"]

ParamsT = Union[Iterable[torch.Tensor], Iterable[Dict[str, Any]]]


def _tensors(params: ParamsT) -> List[torch.Tensor]:
    """The tensors of `params` (tensors or parameter groups), each once, in order."""
    out: Dict[int, torch.Tensor] = {}
    for item in params:
        group = item["params"] if isinstance(item, dict) else [item]
        for p in [group] if isinstance(group, torch.Tensor) else group:
            out.setdefault(id(p), p)
    return list(out.values())


class Optimizer(torch.optim.Optimizer):
    """Optimizer(params, peer, inner, every=1).

    params: the tensors (or parameter groups) whose values the peer exchanges, every one of
    them, trainable or frozen — their sizes must add up to `peer.dimension`; peer: a
    `phalanx.Peer`; inner: the local optimizer (SGD, Adam, ...) over the same parameters;
    every: local steps between exchanges (model exchange only); overlap: exchange in the
    background, the mix applied one exchange late (model exchange only; see the module's doc);
    outer_lr, outer_momentum, nesterov: the outer optimizer's step from the mix (model exchange,
    not with overlap; the defaults take the mix as it is).
    """

    def __init__(self, params: ParamsT, peer: Any, inner: torch.optim.Optimizer,
                 every: int = 1, overlap: bool = False, outer_lr: float = 1.0,
                 outer_momentum: float = 0.0, nesterov: bool = True) -> None:
        # torch.optim.Optimizer.__init__ is not called: it would make groups and state of its
        # own, and these are the inner optimizer's. What torch's step and hook machinery
        # expects of an instance is set here, for the versions that keep it.
        self.peer = peer
        self.inner = inner
        self.every = int(every)
        if self.every < 1:
            raise ValueError(f"every: expected a positive step count, got {every}")
        self.params = _tensors(params)
        if not self.params:
            raise ValueError("Optimizer: no parameters")
        devices = {p.device for p in self.params}
        if len(devices) != 1:
            raise ValueError(f"Optimizer: parameters on several devices ({devices})")
        total = sum(p.numel() for p in self.params)
        if total != peer.dimension:
            raise ValueError(f"Optimizer: the parameters hold {total} values, the peer was made "
                             f"for {peer.dimension}")
        if peer.exchange_mode == "gradient" and self.every != 1:
            raise ValueError("Optimizer: gradient exchange aggregates every step (every=1)")
        if overlap and peer.exchange_mode != "model":
            raise ValueError("Optimizer: overlap needs model exchange (a gradient's aggregate is "
                             "what the next step applies)")
        self.overlap = bool(overlap)
        self.outer_lr, self.outer_momentum = float(outer_lr), float(outer_momentum)
        self.nesterov = bool(nesterov)
        outer = self.outer_lr != 1.0 or self.outer_momentum != 0.0
        if not (self.outer_lr > 0 and 0 <= self.outer_momentum < 1):
            raise ValueError(f"Optimizer: outer_lr {outer_lr} must be > 0 and outer_momentum "
                             f"{outer_momentum} in [0, 1)")
        if outer and (overlap or peer.exchange_mode != "model"):
            raise ValueError("Optimizer: an outer optimizer steps from a mix of models (model "
                             "exchange, without overlap)")
        self.defaults = getattr(inner, "defaults", {})
        for hooks in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                      "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                      "_optimizer_load_state_dict_pre_hooks",
                      "_optimizer_load_state_dict_post_hooks"):
            setattr(self, hooks, collections.OrderedDict())
        patch = getattr(self, "_patch_step_function", None) or getattr(
            self, "_hook_for_profile", None)
        if patch is not None:
            patch()
        device = devices.pop()
        self.flat = torch.empty(total, dtype=torch.float32, device=device)
        self.flat_grad = torch.zeros(total, dtype=torch.float32, device=device)
        self._offsets: List[int] = []
        offset = 0
        with torch.no_grad():
            for p in self.params:
                if p.dtype != torch.float32:
                    raise TypeError(f"Optimizer: a {p.dtype} parameter; phalanx mixes float32")
                n = p.numel()
                self.flat[offset:offset + n].copy_(p.detach().reshape(-1))
                p.data = self.flat[offset:offset + n].view_as(p)
                if p.requires_grad:
                    p.grad = self.flat_grad[offset:offset + n].view_as(p)
                self._offsets.append(offset)
                offset += n
        self.steps = 0
        self.last_status: Optional[str] = None
        # The outer optimizer's x_start and velocity (None without one).
        self._start = self.flat.clone() if outer else None
        self._velocity = torch.zeros_like(self.flat) if outer else None
        # overlap: the model as sent (_sent) and the exchange's buffer (_wire: the same values,
        # then the mix); the exchange's thread and its answer; an exchange held back (its loss,
        # in a tuple) because the one before came back on an evaluation round and the script
        # reports first.
        self._sent: Optional[torch.Tensor] = None
        self._wire: Optional[torch.Tensor] = None
        self._thread: Optional[threading.Thread] = None
        self._answer: List[Any] = []
        self._deferred: Optional[Tuple[Optional[float]]] = None

    # The inner optimizer's, so a scheduler's change of lr is the one the inner step uses, and
    # its load_state_dict (which rebinds both) stays visible here.
    @property  # type: ignore[override]
    def param_groups(self) -> List[Dict[str, Any]]:
        return self.inner.param_groups

    @param_groups.setter
    def param_groups(self, value: List[Dict[str, Any]]) -> None:
        self.inner.param_groups = value

    @property  # type: ignore[override]
    def state(self) -> Any:
        return self.inner.state

    @state.setter
    def state(self, value: Any) -> None:
        self.inner.state = value

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """A new group for the inner optimizer (its own lr, weight decay, ...) over parameters
        this optimizer already exchanges — e.g. a frozen backbone unfrozen for fine-tuning. The
        exchanged vector's length is fixed when the peer starts: a parameter outside it is an
        error, not silently left out of the gossip."""
        members = {id(p) for p in self.params}
        outside = [p for p in _tensors([param_group]) if id(p) not in members]
        if outside:
            raise ValueError(
                f"add_param_group: {len(outside)} parameter(s) are not in the exchanged buffer "
                f"(the peer exchanges {self.peer.dimension} values, fixed at start); give every "
                "parameter, frozen ones too, to phalanx.Optimizer when you make it")
        self.inner.add_param_group(param_group)

    def zero_grad(self, set_to_none: bool = False) -> None:
        # The gradients stay views into flat_grad (set_to_none would detach them from it).
        del set_to_none
        self.flat_grad.zero_()

    def step(self, closure: Optional[Callable[[], Any]] = None,
             loss: Optional[float] = None) -> Any:
        """One inner step, and the exchange when it is due. `loss` (or the closure's) is logged
        as the round's train loss. Returns the closure's loss."""
        self._check_buffer()
        result = None
        if closure is not None:
            with torch.enable_grad():
                result = closure()
            if loss is None:
                loss = result
        value = float(loss) if loss is not None else None
        if self.peer.exchange_mode == "gradient":
            self._gather_grads()
            self.last_status = self.peer.exchange(self.flat_grad, value)
            self.inner.step()
        else:
            if self.overlap and self._deferred is not None:  # held back for the report: goes now
                self._begin(*self._deferred)
                self._deferred = None
            self.inner.step()
            self.steps += 1
            if self.steps % self.every != 0:
                return result
            if not self.overlap:
                self.last_status = self.peer.exchange(self.flat, value)
                if self._start is not None:
                    self._outer_step(self.last_status == "mixed")
                return result
            self.synchronize()
            if self.peer.evaluation_due:
                # The script evaluates the corrected model and reports before the next vector
                # goes (a new one would close the evaluation unreported).
                self._deferred = (value,)
            else:
                self._begin(value)
        return result

    def _outer_step(self, mixed: bool) -> None:
        """flat holds the mix M (when `mixed`): the outer step from x_start, which it becomes."""
        start, v, x = self._start, self._velocity, self.flat
        assert start is not None and v is not None
        with torch.no_grad():
            if mixed:
                delta = start.sub_(x)  # Δ = x_start − M, in x_start's buffer
                v.mul_(self.outer_momentum).add_(delta)
                x.add_(delta)  # back to x_start
                if self.nesterov:
                    x.add_(delta, alpha=-self.outer_lr)
                    x.add_(v, alpha=-self.outer_lr * self.outer_momentum)
                else:
                    x.add_(v, alpha=-self.outer_lr)
            start.copy_(x)

    def synchronize(self) -> Optional[str]:
        """overlap: waits for the exchange in flight and applies its mix as a correction
        (model += mix − model as sent). Returns its answer (None: none was in flight). Call it
        before evaluating or saving the model when you want the latest mix in it."""
        if self._thread is None:
            return None
        self._thread.join()
        self._thread = None
        status, error = self._answer
        if error is not None:
            raise error
        self.last_status = status
        if status == "mixed":
            with torch.no_grad():
                self._wire.sub_(self._sent)
                self.flat.add_(self._wire)
        return status

    def _begin(self, loss: Optional[float]) -> None:
        if self._wire is None:
            self._wire = torch.empty_like(self.flat)
            self._sent = torch.empty_like(self.flat)
        with torch.no_grad():
            self._wire.copy_(self.flat)
            self._sent.copy_(self.flat)
        self._answer = [None, None]

        def exchange() -> None:
            try:
                self._answer[0] = self.peer.exchange(self._wire, loss)
            except BaseException as e:  # raised in the training loop's thread by synchronize
                self._answer[1] = e

        self._thread = threading.Thread(target=exchange, name="phalanx-exchange", daemon=True)
        self._thread.start()

    def _check_buffer(self) -> None:
        # model.to(device), .double() or .half() after wrapping give the parameters new storage:
        # the exchange would then mix a buffer the model no longer reads.
        base = self.flat.data_ptr()
        for i, (p, offset) in enumerate(zip(self.params, self._offsets)):
            if (p.data_ptr() != base + 4 * offset or p.dtype != torch.float32
                    or p.device != self.flat.device):
                raise RuntimeError(
                    f"phalanx.Optimizer: parameter {i} (shape {tuple(p.shape)}, {p.dtype} on "
                    f"{p.device}) no longer lives in the exchanged buffer ({self.flat.device}): "
                    "the model was moved or cast after the optimizer was made (model.to(...), "
                    ".double(), .half()); make the optimizer after moving the model")

    def _gather_grads(self) -> None:
        # model.zero_grad(set_to_none=True) (torch 2's default) or a hook may have replaced a
        # gradient view: copy it back into the flat buffer and make it a view again.
        with torch.no_grad():
            for p, offset in zip(self.params, self._offsets):
                n = p.numel()
                view = self.flat_grad[offset:offset + n]
                if p.grad is None:
                    view.zero_()
                    if p.requires_grad:
                        p.grad = view.view_as(p)
                elif p.grad.data_ptr() != view.data_ptr():
                    view.copy_(p.grad.reshape(-1))
                    p.grad = view.view_as(p)

    def state_dict(self) -> Dict[str, Any]:
        self.synchronize()
        state = {"inner": self.inner.state_dict(), "steps": self.steps}
        if self._start is not None:
            state["outer"] = {"start": self._start.clone(), "velocity": self._velocity.clone()}
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.inner.load_state_dict(state_dict["inner"])
        self.steps = int(state_dict["steps"])
        outer = state_dict.get("outer")
        if outer is not None and getattr(self, "_start", None) is not None:
            self._start.copy_(outer["start"])
            self._velocity.copy_(outer["velocity"])

    def __repr__(self) -> str:
        return (f"phalanx.Optimizer(peer {self.peer.id}, every {self.every}, "
                f"inner {self.inner!r})")
