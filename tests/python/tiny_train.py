"""A minimal training script for `phalanx launch --script`: a random vector nudged every step,
exchanged through the peer the launcher describes, an evaluation reported when one is due."""

import argparse
import json
import os
import sys

import numpy as np

import phalanx

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--write-env", help="folder for env-ID.json: the rank variables launch set")
args = ap.parse_args()
peer = phalanx.Peer.from_env(dimension=16)
if args.write_env:
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES")
    with open(f"{args.write_env}/env-{peer.id}.json", "w") as f:
        json.dump({n: os.environ.get(n) for n in names}, f)
x = np.random.default_rng(peer.id).standard_normal(16).astype(np.float32)
for _ in range(args.steps):
    if peer.finished:
        break
    x -= 0.1 * x
    peer.exchange(x, loss=float(np.dot(x, x)))
    if peer.evaluation_due:
        peer.report(0.5, 1.0)
peer.close()
sys.exit({"completed": 0, "diverged": 3}.get(peer.status, 1))
