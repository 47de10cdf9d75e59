#!/usr/bin/env python3
"""The language-model table of docs/RESULTS.md: examples/char_lm.py under phalanx launch.

Eight peers on a complete graph (topologies/complete-8.yaml, b = 2), 600 local AdamW steps per
peer in every run: per-step gossip of the model (H = 1) and the robust outer loop over models
(H local steps, then the robust mix), dense or with QSGD 8-/4-bit CHOCO replicas; clean (all
eight honest) or with peers 6 and 7 Byzantine. Beside them the reference trained alone on the
six honest shards, batch 6 x 16, for the same 600 steps (char_lm.py --alone 6).

    /usr/bin/python3 examples/char_lm_grid.py --out runs/lm            # every run, then the table
    /usr/bin/python3 examples/char_lm_grid.py --out runs/lm --only nna-q8-h30-alie
    /usr/bin/python3 examples/char_lm_grid.py --out runs/lm --report-only

A run whose folder holds a summary.json is not run again (delete the folder to redo it). Writes
OUT/results.md (the table; tools/dev/results takes OUT as one of its folders), OUT/results.csv,
OUT/results.json,
OUT/command.txt, and OUT/plots/loss-vs-bytes.svg and OUT/plots/loss-vs-wan-time.svg (matplotlib,
the Debian package python3-matplotlib).

Simulated-WAN time (a model, not a measurement): each round costs H local steps at the time one
step takes on one core of this machine (char_lm.py --time-steps, measured here first), plus the
one-way latency, plus the bytes the peer sent that round over its uplink (every neighbour's
copy through the same link). Defaults: 50 ms and 100 Mbit/s, the WAN of docs/GUIDE.md's
outer-loop runs. The peers themselves share this machine's two cores, so their wall time is
reported as measured and is not the WAN time.
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCAL_STEPS = 600
HONEST_SHARDS = 6
BYZANTINE = "6,7"

# name: (H, rule, attack or None, extra config settings). QSGD 4-bit is no contraction in the
# worst case (variance factor min(B/s², √B/s) = 1.6 at bucket 128, 7 levels): its CHOCO step is
# the contraction measured (gamma auto) instead of examples/char_lm.yaml's 1.
Q8 = ("compression.codec=qsgd", "compression.bits=8")
Q4 = ("compression.codec=qsgd", "compression.bits=4", "compression.gamma=auto")
# Top-1 % of each replica delta with fp16 values, every step: about 130x smaller than a dense
# model; no periodic keyframes (one dense replica every 100 steps would alone cost what 100x
# allows), gamma measured (top-k is a contraction of factor 0.01 at worst).
TOPK1 = ("compression.codec=topk", "compression.density=0.01", "compression.values=fp16",
         "compression.gamma=auto", "compression.keyframe_every=0")
RUNS = {
    "nna-dense-h1-clean": (1, "nna", None, ()),
    "nna-q8-h30-clean": (30, "nna", None, Q8),
    "nna-q8-h30-opt_alie": (30, "nna", "opt_alie", Q8),
    "mean-q8-h30-opt_alie": (30, "mean", "opt_alie", Q8),
    "nna-q8-h30-alie": (30, "nna", "alie", Q8),
    "mean-q8-h30-alie": (30, "mean", "alie", Q8),
    "cs_plus_pt-q8-h30-clean": (30, "cs_plus_pt", None, Q8),
    "cs_plus_pt-q8-h30-opt_alie": (30, "cs_plus_pt", "opt_alie", Q8),
    "nna-q8-h30-opt_foe": (30, "nna", "opt_foe", Q8),
    "cs_plus_pt-q8-h30-opt_foe": (30, "cs_plus_pt", "opt_foe", Q8),
    "nna-dense-h30-clean": (30, "nna", None, ()),
    "nna-q4-h15-clean": (15, "nna", None, Q4),
    "nna-q4-h15-opt_alie": (15, "nna", "opt_alie", Q4),
    "nna-dense-h1-opt_alie": (1, "nna", "opt_alie", ()),
    "nna-topk1-h1-clean": (1, "nna", None, TOPK1),
}


def describe(name, h):
    _, rule, attack, settings = RUNS[name]
    codec = {Q8: "QSGD 8-bit replicas", Q4: "QSGD 4-bit replicas",
             TOPK1: "top-1 % fp16 replicas"}.get(settings, "dense")
    exchange = "per-step gossip" if h == 1 else f"models every {h} steps"
    return f"{exchange}, {codec}", rule, attack or "none"


def run_cell(args, name):
    h, rule, attack, settings = RUNS[name]
    out = os.path.join(args.out, name)
    if os.path.exists(os.path.join(out, "summary.json")):
        return
    rounds = LOCAL_STEPS // h
    command = [args.phalanx, "launch", "--topology", args.topology,
               "--config", os.path.join(ROOT, "examples", "char_lm.yaml"),
               "--rounds", str(rounds), "--set", f"rounds.eval_every={max(1, rounds // 10)}",
               "--set", f"mixing.rule={rule}", "--script", os.path.join(ROOT, "examples", "char_lm.py"),
               "--python", sys.executable, "--out", out, "--force"]
    for s in settings:
        command += ["--set", s]
    if attack:
        command += ["--byzantine", BYZANTINE, "--attack", attack]
    command += ["--", "--every", str(h)] + args.script_args
    print(f"{name}: {' '.join(command)}", flush=True)
    started = time.monotonic()
    with open(os.path.join(args.out, f"{name}.log"), "w") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - started
    with open(os.path.join(out, "wall.json"), "w") as f:
        json.dump({"seconds": seconds, "exit": done.returncode, "every": h, "command": command}, f)
    print(f"{name}: exit {done.returncode} after {seconds:.0f} s", flush=True)


def run_alone(args):
    path = os.path.join(args.out, "alone.jsonl")
    if os.path.exists(path):
        return
    command = [sys.executable, os.path.join(ROOT, "examples", "char_lm.py"), "--alone",
               str(HONEST_SHARDS), "--steps", str(LOCAL_STEPS)] + args.script_args
    print(f"alone: {' '.join(command)}", flush=True)
    started = time.monotonic()
    lines = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    with open(path + ".tmp", "w") as f:
        f.write(lines)
        f.write(json.dumps({"wall_seconds": time.monotonic() - started}) + "\n")
    os.replace(path + ".tmp", path)


def step_seconds(args):
    path = os.path.join(args.out, "step.json")
    if not os.path.exists(path):
        command = [sys.executable, os.path.join(ROOT, "examples", "char_lm.py"),
                   "--time-steps", "30", "--threads", "1"] + args.script_args
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        with open(path, "w") as f:
            f.write(out)
    return json.load(open(path))["step_seconds"]


def read_run(args, name, step):
    """Per honest peer: its records; the run's curve and final figures."""
    out = os.path.join(args.out, name)
    summary = json.load(open(os.path.join(out, "summary.json")))
    wall = json.load(open(os.path.join(out, "wall.json")))
    h = wall.get("every", RUNS[name][0])
    byzantine = set(summary["byzantine"])
    peers = sorted(int(f[5:-6]) for f in os.listdir(out)
                   if f.startswith("node-") and f.endswith(".jsonl"))
    curves, finals, sent, wan = [], [], [], []
    for peer in peers:
        if peer in byzantine:
            continue
        records = [json.loads(line) for line in open(os.path.join(out, f"node-{peer}.jsonl"))]
        records = [r for r in records if "round" in r]
        clock, previous, curve = 0.0, 0, []
        for r in records:
            clock += h * step + args.latency_ms / 1e3 + \
                (r["bytes_sent_total"] - previous) * 8 / (args.rate_mbit * 1e6)
            previous = r["bytes_sent_total"]
            if "test_loss" in r:
                curve.append((r["bytes_sent_total"], clock, r["test_loss"]))
        curves.append(curve)
        finals.append(curve[-1][2] if curve and curve[-1][2] is not None else math.inf)
        sent.append(records[-1]["bytes_sent_total"] if records else 0)
        wan.append(clock)
    # The curve: the honest peers' mean at each evaluation they all reached.
    points = min(len(c) for c in curves)
    curve = [tuple(sum(c[k][i] for c in curves) / len(curves) for i in range(3))
             for k in range(points)]
    exchange, rule, attack = describe(name, h)
    status = ("diverged" if summary["diverged"] else
              "crashed" if summary["crashed"] else "completed")
    return {"name": name, "H": h, "exchange": exchange, "rule": rule, "attack": attack,
            "status": status,
            "loss_mean": sum(finals) / len(finals), "loss_worst": max(finals),
            "bytes_per_peer": sum(sent) / len(sent), "wan_seconds": sum(wan) / len(wan),
            "wall_seconds": wall["seconds"], "beside": wall.get("beside", ""),
            "diverged_round": summary["rounds"] if summary["diverged"] else None,
            "curve": curve}


def report(args):
    step = step_seconds(args)
    rows = [read_run(args, name, step) for name in RUNS
            if os.path.exists(os.path.join(args.out, name, "summary.json"))]
    alone = None
    alone_path = os.path.join(args.out, "alone.jsonl")
    if os.path.exists(alone_path):
        lines = [json.loads(line) for line in open(alone_path)]
        evals = [r for r in lines if "loss" in r]
        alone = {"loss": evals[-1]["loss"], "wall_seconds": lines[-1].get("wall_seconds"),
                 "curve": [(r["step"], r["loss"]) for r in evals]}
    dense = next((r for r in rows if r["name"] == "nna-dense-h1-clean"), None)
    clean = {(r["exchange"], r["rule"]): r for r in rows if r["attack"] == "none"}
    lines = [
        "# Results of examples/char_lm_grid.py",
        "",
        f"Eight peers (complete graph, b = 2), {LOCAL_STEPS} local AdamW steps of 16 x 64 bytes "
        "each; attacked runs: peers 6 and 7 Byzantine, six honest (model space; local "
        "knowledge, which on a complete graph is every honest model; alie: mean + 1.5 sigma; "
        "opt_alie and opt_foe: their factor line-searched against the rule each target runs). "
        "Validation loss in nats per byte, mean and worst over the honest peers; \"vs clean\": "
        "against the same exchange and rule with all eight peers honest. \"x fewer\": "
        "per-step dense gossip's bytes per honest peer over the run's. WAN "
        f"time: simulated ({args.latency_ms:g} ms, {args.rate_mbit:g} Mbit/s uplink, "
        f"{step * 1e3:.0f} ms per local step on one core).",
        "",
        "| exchange | rule | attack | val. loss (mean / worst) | vs clean | vs alone | MB sent per peer | x fewer | WAN time | wall time here |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    shared = False
    for r in rows:
        base = clean.get((r["exchange"], r["rule"]))
        wall = f"{r['wall_seconds'] / 60:.1f} min" + (" *" if r["beside"] else "")
        shared = shared or bool(r["beside"])
        if r["status"] != "completed" or not math.isfinite(r["loss_mean"]):
            # No final model to compare: what happened, and when.
            n = r["diverged_round"]
            when = f" after {n} exchange{'s' if n != 1 else ''}" if n else ""
            lines.append(f"| {r['exchange']} | {r['rule']} | {r['attack']} | {r['status']}"
                         f"{when} | | | {r['bytes_per_peer'] / 1e6:,.1f} | | | {wall} |")
            continue
        vs_clean = (f"{100 * (r['loss_mean'] / base['loss_mean'] - 1):+.1f} %"
                    if base and r["attack"] != "none" else "")
        vs_alone = f"{100 * (r['loss_mean'] / alone['loss'] - 1):+.1f} %" if alone else ""
        fewer = f"{dense['bytes_per_peer'] / r['bytes_per_peer']:.0f}x" if dense else ""
        lines.append(f"| {r['exchange']} | {r['rule']} | {r['attack']} | "
                     f"{r['loss_mean']:.4f} / {r['loss_worst']:.4f} | {vs_clean} | {vs_alone} | "
                     f"{r['bytes_per_peer'] / 1e6:,.1f} | {fewer} | {r['wan_seconds']:.0f} s | "
                     f"{wall} |")
    if alone:
        lines.append(f"| alone on the {HONEST_SHARDS} honest shards (batch {HONEST_SHARDS * 16}) "
                     f"| — | — | {alone['loss']:.4f} | | "
                     f"| 0 | | | {alone['wall_seconds'] / 60:.1f} min |")
    if shared:
        lines += ["", "\\* ran beside another run on the same two cores (its wall time is not "
                  "that of a run alone)."]
    plots = plot(args, rows, alone)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}](plots/{p})" for p in plots]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        columns = ["name", "H", "exchange", "rule", "attack", "status", "loss_mean",
                   "loss_worst", "bytes_per_peer", "wan_seconds", "wall_seconds"]
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows([[r[c] if isinstance(r[c], str) else f"{r[c]:.6g}" for c in columns]
                          for r in rows])
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"step_seconds": step, "alone": alone, "runs": rows}, f, indent=1)
    print("\n".join(lines))


def plot(args, rows, alone):
    try:
        import matplotlib
    except ImportError:
        print("no plots: matplotlib is missing (the Debian package python3-matplotlib)")
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(os.path.join(args.out, "plots"), exist_ok=True)
    files = []
    for axis, label, file in ((0, "MB sent per honest peer (log)", "loss-vs-bytes.svg"),
                              (1, "simulated-WAN time, s", "loss-vs-wan-time.svg")):
        fig, ax = plt.subplots(figsize=(8, 5))
        for r in rows:
            xs = [p[axis] / (1e6 if axis == 0 else 1) for p in r["curve"]]
            ys = [p[2] for p in r["curve"]]
            ax.plot(xs, ys, marker=".", label=f"{r['exchange']}, {r['rule']}, {r['attack']}")
        if alone:
            ax.axhline(alone["loss"], color="grey", linestyle="--", label="alone (final)")
        if axis == 0:
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("validation loss, nats per byte")
        ax.set_ylim(top=4.0)
        ax.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "plots", file))
        plt.close(fig)
        files.append(file)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--phalanx", default=os.path.join(ROOT, "build", "phalanx"))
    ap.add_argument("--topology", default=os.path.join(ROOT, "topologies", "complete-8.yaml"))
    ap.add_argument("--only", nargs="*", default=None, help="run only these (names in RUNS)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--rate-mbit", type=float, default=100.0)
    ap.add_argument("script_args", nargs="*", help="for char_lm.py (after --)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    unknown = set(args.only or ()) - set(RUNS) - {"alone"}
    if unknown:
        sys.exit(f"--only: unknown runs {sorted(unknown)} (known: alone, {', '.join(RUNS)})")
    if not args.report_only:
        with open(os.path.join(args.out, "command.txt"), "w") as f:
            f.write(" ".join(["python3", os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]) + "\n")
        step_seconds(args)
        for name in ["alone"] + list(RUNS):
            if args.only is not None and name not in args.only:
                continue
            run_alone(args) if name == "alone" else run_cell(args, name)
    report(args)


if __name__ == "__main__":
    main()
