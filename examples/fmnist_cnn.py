#!/usr/bin/env python3
"""LeNet-5-style CNN on Fashion-MNIST, decentralized and Byzantine-robust with phalanx.

Started once per peer by `phalanx launch --script examples/fmnist_cnn.py` (the peer's place in
the run comes from the PHALANX_* environment). Alone, for one peer of a run started elsewhere:
    PYTHONPATH=build/python python3 examples/fmnist_cnn.py --topology T --config C --id K

Data: the Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), read from
its idx files; no download. Each peer trains on its own shard of the training set (a seeded
permutation cut into one part per peer of the topology).
"""

import argparse
import gzip
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, dims = int.from_bytes(data[0:4], "big"), data[3]
    if magic >> 8 != 0x08:
        raise ValueError(f"{path}: not an idx file of unsigned bytes")
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_fashion_mnist(root):
    def part(images, labels):
        x = read_idx(os.path.join(root, images)).astype(np.float32) / 255.0
        y = read_idx(os.path.join(root, labels)).astype(np.int64)
        return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)

    try:
        train = part("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
        test = part("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    except FileNotFoundError as e:
        sys.exit(f"{e.filename}: missing (install the Debian package dataset-fashion-mnist)")
    mean, std = train[0].mean(), train[0].std()  # the training set's statistics for both
    return ((train[0] - mean) / std, train[1]), ((test[0] - mean) / std, test[1])


class LeNet(nn.Module):
    """LeNet-5's layout with 16 and 32 channels instead of 6 and 16 (120,382 parameters)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5)
        self.fc1 = nn.Linear(32 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            out = model(x[i:i + batch])
            loss += F.cross_entropy(out, y[i:i + batch], reduction="sum").item()
            correct += (out.argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / len(y), loss / len(y)


def train_alone(model, args):
    (x, y), (test_x, test_y) = load_fashion_mnist(args.data)
    x, y, test_x, test_y = (t.to(args.device) for t in (x, y, test_x, test_y))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    generator = torch.Generator().manual_seed(100)
    batch_size = args.batch * args.alone
    for step in range(1, args.steps + 1):
        batch = torch.randint(len(y), (batch_size,), generator=generator).to(args.device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        opt.step()
        schedule.step()
        if step % 100 == 0 or step == args.steps:
            accuracy, test_loss = evaluate(model, test_x, test_y)
            print(json.dumps({"alone": args.alone, "step": step, "batch": batch_size,
                              "test_accuracy": accuracy, "test_loss": test_loss}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology"), ap.add_argument("--config"), ap.add_argument("--id")
    ap.add_argument("--out", default="")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--lr", type=float, default=0.1, help="cosine-annealed to 0 over the run")
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--eval-samples", type=int, default=2000,
                    help="test images for the periodic evaluations (the last uses all)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--alone", type=int, metavar="PEERS", default=0,
                    help="the reference instead: one process, no phalanx, the whole training "
                         "set, batch PEERS x --batch for --steps steps (the samples PEERS "
                         "honest peers see in as many rounds)")
    ap.add_argument("--steps", type=int, default=300, help="with --alone")
    ap.add_argument("--overlap", action="store_true",
                    help="exchange behind the next step, the mix applied one exchange late")
    args = ap.parse_args()
    torch.set_num_threads(1 if not args.alone else torch.get_num_threads())  # peers share cores
    torch.manual_seed(1)  # the same initial model on every peer (MoNNA starts in consensus)

    model = LeNet().to(args.device)
    if args.alone:
        return train_alone(model, args)

    import phalanx  # PYTHONPATH=build/python (phalanx launch --script sets it)

    peer = phalanx.Peer.from_env(dimension=sum(p.numel() for p in model.parameters()),
                                 topology=args.topology, config=args.config, id=args.id,
                                 out=args.out)

    (train_x, train_y), (test_x, test_y) = load_fashion_mnist(args.data)
    # This peer's shard: the same seeded permutation on every peer, one part each.
    order = torch.randperm(len(train_y), generator=torch.Generator().manual_seed(7))
    shard = order[peer.index::peer.peers]
    x, y = train_x[shard].to(args.device), train_y[shard].to(args.device)
    test_x, test_y = test_x.to(args.device), test_y.to(args.device)

    inner = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    opt = phalanx.Optimizer(model.parameters(), peer, inner, overlap=args.overlap)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, peer.rounds)
    generator = torch.Generator().manual_seed(100 + peer.id)
    step = 0
    diverged = False
    while not peer.finished:
        batch = torch.randint(len(y), (args.batch,), generator=generator).to(args.device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        opt.step(loss=loss.item())
        schedule.step()
        step += 1
        if peer.evaluation_due:  # every rounds.eval_every and the last: evaluate the mix
            last = step >= peer.rounds
            n = len(test_y) if last else min(args.eval_samples, len(test_y))
            accuracy, test_loss = evaluate(model, test_x[:n], test_y[:n])
            peer.report(accuracy=accuracy, loss=test_loss)
            print(json.dumps({"peer": peer.id, "step": step, "test_accuracy": accuracy,
                              "test_loss": test_loss}), flush=True)
        if not math.isfinite(loss.item()):
            diverged = True  # the mix took the model to inf or NaN
            break
    opt.synchronize()  # overlap: the last exchange's mix
    peer.close()
    # launch's convention: 3 for a peer that diverged, whether its node or its loss saw it.
    sys.exit(3 if diverged else {"completed": 0, "diverged": 3}.get(peer.status, 1))


if __name__ == "__main__":
    main()
