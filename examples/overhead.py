#!/usr/bin/env python3
"""What phalanx costs a training loop: per-step time with and without the exchange, in one run.

Started once per peer by `phalanx launch --script examples/overhead.py -- --model cnn|mlp25m`
(config examples/overhead.yaml). Every peer first exchanges once (so all start together), then
times --steps local steps with the exchange disabled (forward, backward, inner SGD step), then
--steps steps through phalanx.Optimizer (the same, plus gossip and the robust mix), on
synthetic data. Each peer prints one JSON line; the ratio is its phalanx step over its local
step, both measured with every peer of the run on the same machine doing the same.
"""

import argparse
import json
import time

import torch
from torch import nn

import phalanx


def model_of(kind):
    if kind == "cnn":  # the CNN of examples/fmnist_cnn.py (this script's folder is on sys.path)
        from fmnist_cnn import LeNet
        return LeNet(), (1, 28, 28)
    if kind == "mlp25m":  # 1024-8192-2048-10: 25,194,506 parameters
        model = nn.Sequential(nn.Linear(1024, 8192), nn.ReLU(), nn.Linear(8192, 2048), nn.ReLU(),
                              nn.Linear(2048, 10))
        return model, (1024,)
    raise SystemExit(f"--model {kind}: expected cnn or mlp25m")


def setup(kind, batch):
    """One thread, the seeded model, its peer (from launch's environment), SGD wrapped by
    phalanx.Optimizer (the model then lives in opt.flat) and one synthetic batch of the peer's
    own: (model, peer, inner, opt, x, y)."""
    torch.set_num_threads(1)
    torch.manual_seed(1)
    model, shape = model_of(kind)
    dimension = sum(p.numel() for p in model.parameters())
    peer = phalanx.Peer.from_env(dimension=dimension)
    inner = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    opt = phalanx.Optimizer(model.parameters(), peer, inner)
    generator = torch.Generator().manual_seed(peer.id)
    x = torch.randn((batch,) + shape, generator=generator)
    y = torch.randint(10, (batch,), generator=generator)
    return model, peer, inner, opt, x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    model, peer, inner, opt, x, y = setup(args.model, args.batch)
    dimension = peer.dimension

    def step(exchange):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if exchange:
            opt.step(loss=loss.item())
        else:
            inner.step()

    step(exchange=True)  # round 0: every peer is up and connected
    timings = {}
    for phase, exchange in (("local", False), ("phalanx", True)):
        started = time.perf_counter()
        for _ in range(args.steps):
            step(exchange)
        timings[phase] = (time.perf_counter() - started) / args.steps
    print(json.dumps({"peer": peer.id, "model": args.model, "parameters": dimension,
                      "steps": args.steps, "local_step_s": timings["local"],
                      "phalanx_step_s": timings["phalanx"],
                      "ratio": timings["phalanx"] / timings["local"],
                      "rounds_mixed": peer.rounds_mixed}), flush=True)
    peer.close()


if __name__ == "__main__":
    main()
