"""phalanx.torch.Optimizer: a torch model's training, decentralized and Byzantine-robust.

The model's parameters are moved into one flat float32 buffer (each parameter becomes a view
into it, so no copy is made per step); the inner optimizer steps as usual, and every `every`
steps the buffer is exchanged with the peer's neighbours and replaced by the robust mix:

- exchange: model (MoNNA, ALGORITHMS.md §1): inner step, then exchange the half-step model.
- exchange: gradient: the flat gradient is exchanged and replaced by its robust aggregate
  before the inner step (every step; `every` must be 1).
"""

import torch

__all__ = ["Optimizer"]


class Optimizer:
    def __init__(self, params, peer, inner, every=1):
        self.peer = peer
        self.inner = inner
        self.every = int(every)
        if self.every < 1:
            raise ValueError(f"every: expected a positive step count, got {every}")
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("Optimizer: no parameters that require gradients")
        devices = {p.device for p in self.params}
        if len(devices) != 1:
            raise ValueError(f"Optimizer: parameters on several devices ({devices})")
        total = sum(p.numel() for p in self.params)
        if total != peer.dimension:
            raise ValueError(f"Optimizer: the model has {total} parameters, the peer was made "
                             f"for {peer.dimension}")
        if peer.exchange_mode == "gradient" and self.every != 1:
            raise ValueError("Optimizer: gradient exchange aggregates every step (every=1)")
        device = devices.pop()
        self.flat = torch.empty(total, dtype=torch.float32, device=device)
        self.flat_grad = torch.zeros(total, dtype=torch.float32, device=device)
        offset = 0
        with torch.no_grad():
            for p in self.params:
                if p.dtype != torch.float32:
                    raise TypeError(f"Optimizer: a {p.dtype} parameter; phalanx mixes float32")
                n = p.numel()
                self.flat[offset:offset + n].copy_(p.detach().view(-1))
                p.data = self.flat[offset:offset + n].view_as(p)
                p.grad = self.flat_grad[offset:offset + n].view_as(p)
                offset += n
        self.steps = 0
        self.last_status = None

    @property
    def param_groups(self):
        return self.inner.param_groups

    def zero_grad(self, set_to_none=False):
        # The gradients stay views into flat_grad (set_to_none would detach them from it).
        del set_to_none
        self.flat_grad.zero_()

    def step(self, closure=None, loss=None):
        """One inner step, and the exchange when it is due. `loss` (or the closure's) is logged
        as the round's train loss. Returns the closure's loss."""
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
            self.inner.step()
            self.steps += 1
            if self.steps % self.every == 0:
                self.last_status = self.peer.exchange(self.flat, value)
        return result

    def _gather_grads(self):
        # model.zero_grad(set_to_none=True) (torch 2's default) or a hook may have replaced a
        # gradient view: copy it back into the flat buffer and make it a view again.
        offset = 0
        with torch.no_grad():
            for p in self.params:
                n = p.numel()
                view = self.flat_grad[offset:offset + n]
                if p.grad is None:
                    view.zero_()
                    p.grad = view.view_as(p)
                elif p.grad.data_ptr() != view.data_ptr():
                    view.copy_(p.grad.view(-1))
                    p.grad = view.view_as(p)
                offset += n

    def state_dict(self):
        return {"inner": self.inner.state_dict(), "steps": self.steps}

    def load_state_dict(self, state):
        self.inner.load_state_dict(state["inner"])
        self.steps = int(state["steps"])
