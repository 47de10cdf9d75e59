#!/usr/bin/env python3
"""phalanx's exchange against torch.distributed's gloo all_reduce, in the same processes.

Started once per peer by `phalanx launch --script examples/allreduce_bench.py -- --model M
--master-port P` (tools/dev/bench-allreduce runs the grid and prints the table). Each peer joins
a gloo process group (RANK and WORLD_SIZE from launch) and then runs --repeats rounds of three
blocks of --steps steps each, rotated so that no block always runs first:
  local    forward, backward, SGD step: the compute floor
  gloo     the same, then all_reduce(SUM) of the flat model and a division by WORLD_SIZE
           (model averaging on a complete graph: what the mean rule computes there)
  phalanx  the same, then peer.exchange of the flat model (gossip and the configured rule)
  overlap  the same through phalanx.Optimizer(overlap=True): the exchange runs behind the next
           step, its mix applied one exchange late (the block ends by waiting for the last)
Every step is timed, and the communication inside it (all_reduce + division; exchange). One
JSON line per peer: the medians of each, the process's resident memory after its 5th phalanx
step and after its last (growth would show a leak), and the median minor page faults of a step
of each block (a fresh model-sized buffer per step faults in dimension × 4 / 4096 pages; torch's
backward allocates its gradients afresh every step, so the local block has its own share).
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn

from overhead import setup  # this script's folder is on sys.path


def resident_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def minor_faults():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])  # field 10, minflt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="cnn", help="cnn (120k) or mlp25m (25.2M)")
    ap.add_argument("--steps", type=int, default=5, help="steps per block")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of the three blocks")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--master-port", type=int, required=True, help="gloo's rendezvous port")
    ap.add_argument("--blocks", default="local,gloo,phalanx,overlap", help="which blocks to run")
    args = ap.parse_args()
    model, peer, inner, opt, x, y = setup(args.model, args.batch)
    dimension = peer.dimension
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.master_port}",
                            rank=peer.index, world_size=peer.peers)

    def communicate(kind):
        if kind == "gloo":
            dist.all_reduce(opt.flat, op=dist.ReduceOp.SUM)
            opt.flat.div_(peer.peers)
        elif kind == "phalanx":
            status = peer.exchange(opt.flat, loss=None)
            if status != "mixed":
                raise SystemExit(f"peer {peer.id}: exchange answered {status}")

    def step(kind):
        started = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if kind == "overlap":
            opt.step()
            return time.perf_counter() - started, float("nan")
        inner.step()
        comm_started = time.perf_counter()
        communicate(kind)
        done = time.perf_counter()
        return done - started, done - comm_started

    communicate("phalanx")  # round 0: every peer up and connected
    dist.barrier()
    kinds = args.blocks.split(",")
    steps = {k: [] for k in kinds}
    comm = {k: [] for k in kinds}
    rss = []
    faults = {k: [] for k in kinds}
    for r in range(args.repeats):
        for kind in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:
            dist.barrier()  # every peer starts each block together
            opt.overlap = kind == "overlap"
            for k in range(args.steps):
                faulted = minor_faults()
                total, inside = step(kind)
                faults[kind].append(minor_faults() - faulted)
                if k + 1 == args.steps and kind == "overlap":
                    waited = time.perf_counter()
                    opt.synchronize()  # the block's last mix lands within it
                    total += time.perf_counter() - waited
                steps[kind].append(total)
                comm[kind].append(inside)
                if kind == "phalanx":
                    rss.append(resident_mib())
    dist.barrier()
    out = {"peer": peer.id, "model": args.model, "parameters": dimension, "peers": peer.peers,
           "steps": args.steps * args.repeats, "rounds_mixed": peer.rounds_mixed}
    for kind in kinds:
        out[f"{kind}_step_s"] = statistics.median(steps[kind])
        if kind in ("gloo", "phalanx"):
            out[f"{kind}_comm_s"] = statistics.median(comm[kind])
    for kind in kinds:
        out[f"faults_{kind}"] = statistics.median(faults[kind])
    if len(rss) > 5:
        out["rss_mib_after_5"] = rss[4]
        out["rss_mib_end"] = rss[-1]
    print(json.dumps(out), flush=True)
    dist.destroy_process_group()
    peer.close()


if __name__ == "__main__":
    main()
