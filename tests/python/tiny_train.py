"""A minimal training script for `phalanx launch --script`: a random vector nudged every step,
exchanged through the peer the launcher describes, an evaluation reported when one is due."""

import argparse
import sys

import numpy as np

import phalanx

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=10)
args = ap.parse_args()
peer = phalanx.Peer.from_env(dimension=16)
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
