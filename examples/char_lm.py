#!/usr/bin/env python3
"""A byte-level transformer language model, decentralized and Byzantine-robust with phalanx.

Started once per peer by `phalanx launch --script examples/char_lm.py` (the peer's place in the
run comes from the PHALANX_* environment); `--every H` mixes models every H local steps (the
robust outer loop over models: local Adam steps, then the robust mix of the models), 1 is
per-step gossip. `--alone N` is the reference: one process, no phalanx, the union of the first N
of `--shards` shards (the honest peers' when the Byzantine ids are the last), batch N x --batch,
for as many local steps as a peer takes. examples/char_lm_grid.py runs the table of
docs/RESULTS.md ("A language model").

Corpus: the glosses and usage examples of WordNet 3.0 (the Debian package wordnet-base,
/usr/share/wordnet/data.{noun,verb,adj,adv}; about 117,000 lines of English, 9.6 MB), read as
bytes; no download. A seeded shuffle of the lines; every 20th line is held out for validation,
the rest cut into one shard per peer of the topology (line i to shard i mod peers: IID shards).
Validation: the same fixed windows for every peer and for the reference; the loss is in nats per
byte (perplexity = exp(loss), bits per byte = loss / ln 2).
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")


def read_glosses(root):
    """Every synset's gloss (definitions and quoted examples), in file order."""
    lines = []
    for name in WORDNET_FILES:
        path = os.path.join(root, name)
        try:
            with open(path, "rb") as f:
                for raw in f:
                    if raw.startswith(b"  "):  # the licence header
                        continue
                    bar = raw.find(b" | ")
                    if bar < 0:
                        raise ValueError(f"{path}: a synset line without ' | ' (a gloss): "
                                         f"{raw[:60]!r}")
                    lines.append(raw[bar + 3:].rstrip())
        except FileNotFoundError:
            sys.exit(f"{path}: missing (install the Debian package wordnet-base)")
    return lines


def load_corpus(root, shards):
    """(train shards as byte tensors, validation bytes)."""
    lines = read_glosses(root)
    order = torch.randperm(len(lines), generator=torch.Generator().manual_seed(7)).tolist()
    held_out = [lines[i] for k, i in enumerate(order) if k % 20 == 0]
    train = [lines[i] for k, i in enumerate(order) if k % 20 != 0]

    def as_bytes(part):
        data = b"\n".join(part) + b"\n"
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)

    return [as_bytes(train[s::shards]) for s in range(shards)], as_bytes(held_out)


class CharLM(nn.Module):
    """A decoder-only transformer over bytes: token and learned position embeddings, pre-norm
    blocks of torch's TransformerEncoderLayer under a causal mask, a final norm, a linear head."""

    def __init__(self, dim=128, layers=6, heads=4, context=64, vocab=256):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(context, dim)
        block = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        # -inf above the diagonal: position t attends to positions <= t only.
        self.register_buffer("causal", torch.triu(torch.full((context, context), -math.inf), 1),
                             persistent=False)

    def forward(self, x):
        t = x.shape[1]
        h = self.tokens(x) + self.positions(torch.arange(t, device=x.device))
        h = self.blocks(h, mask=self.causal[:t, :t])
        return self.head(self.norm(h))


def sample(data, batch, context, generator):
    """`batch` random windows of context + 1 bytes: inputs and next-byte targets."""
    starts = torch.randint(len(data) - context - 1, (batch,), generator=generator)
    windows = torch.stack([data[s:s + context + 1] for s in starts.tolist()]).long()
    return windows[:, :-1], windows[:, 1:]


def validation_windows(data, count, context):
    """`count` windows spread evenly over the validation bytes (the same for every peer)."""
    step = (len(data) - context - 1) // count
    windows = torch.stack([data[k * step:k * step + context + 1] for k in range(count)]).long()
    return windows[:, :-1], windows[:, 1:]


def lm_loss(model, x, y, reduction="mean"):
    """Cross-entropy of the next byte at every position."""
    return F.cross_entropy(model(x).flatten(0, 1), y.flatten(), reduction=reduction)


def evaluate(model, windows, batch=128):
    x, y = windows
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            total += lm_loss(model, x[i:i + batch], y[i:i + batch], "sum").item()
    model.train()
    return total / y.numel()


def schedule(total_steps, warmup):
    """Linear warm-up, then cosine to a tenth of the peak."""
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def metrics(loss):
    return {"loss": loss, "perplexity": math.exp(min(loss, 50.0)),
            "bits_per_byte": loss / math.log(2)}


def train_alone(model, args):
    shards, held_out = load_corpus(args.data, args.shards)
    data = torch.cat(shards[:args.alone])
    windows = validation_windows(held_out, args.eval_windows, args.context)
    inner = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    lr = torch.optim.lr_scheduler.LambdaLR(inner, schedule(args.steps, args.warmup))
    generator = torch.Generator().manual_seed(100)
    batch = args.batch * args.alone
    started = time.monotonic()
    for step in range(1, args.steps + 1):
        x, y = sample(data, batch, args.context, generator)
        inner.zero_grad()
        lm_loss(model, x, y).backward()
        inner.step()
        lr.step()
        if step % args.eval_steps == 0 or step == args.steps:
            print(json.dumps({"alone": args.alone, "step": step, "batch": batch,
                              "seconds": time.monotonic() - started,
                              **metrics(evaluate(model, windows))}), flush=True)


def time_steps(model, args):
    """Seconds per local step (one peer's batch) on this process's threads: the compute of the
    simulated-WAN time (examples/char_lm_grid.py)."""
    shards, _ = load_corpus(args.data, args.shards)
    inner = torch.optim.AdamW(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(100)
    for step in range(args.time_steps + 3):
        if step == 3:
            started = time.perf_counter()
        x, y = sample(shards[0], args.batch, args.context, generator)
        inner.zero_grad()
        lm_loss(model, x, y).backward()
        inner.step()
    print(json.dumps({"step_seconds": (time.perf_counter() - started) / args.time_steps,
                      "threads": torch.get_num_threads()}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology"), ap.add_argument("--config"), ap.add_argument("--id")
    ap.add_argument("--out", default="")
    ap.add_argument("--data", default="/usr/share/wordnet")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16, help="windows per local step")
    ap.add_argument("--lr", type=float, default=5e-3, help="AdamW's peak learning rate")
    ap.add_argument("--warmup", type=int, default=30, help="local steps of linear warm-up")
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--every", type=int, default=1,
                    help="local steps between exchanges (H; 1: per-step gossip)")
    ap.add_argument("--outer-lr", type=float, default=1.0,
                    help="the outer step's learning rate (1 with momentum 0: the mix itself)")
    ap.add_argument("--outer-momentum", type=float, default=0.0,
                    help="the outer step's Nesterov momentum (DiLoCo: lr 0.7, momentum 0.9)")
    ap.add_argument("--eval-windows", type=int, default=512,
                    help="validation windows of --context bytes per evaluation")
    ap.add_argument("--shards", type=int, default=8, help="with --alone or --time-steps")
    ap.add_argument("--alone", type=int, metavar="N", default=0,
                    help="the reference instead: one process, no phalanx, the first N shards, "
                         "batch N x --batch for --steps steps")
    ap.add_argument("--steps", type=int, default=600, help="with --alone")
    ap.add_argument("--eval-steps", type=int, default=60, help="with --alone")
    ap.add_argument("--time-steps", type=int, default=0,
                    help="print the seconds of one local step (mean of this many) and exit")
    ap.add_argument("--threads", type=int, default=0,
                    help="with --alone or --time-steps: torch's threads (default: every core)")
    args = ap.parse_args()
    # Peers share the machine's cores: one thread each; the reference and the timing take
    # --threads.
    torch.set_num_threads((args.threads or os.cpu_count()) if args.alone or args.time_steps else 1)
    torch.manual_seed(1)  # the same initial model on every peer (MoNNA starts in consensus)

    model = CharLM(args.dim, args.layers, args.heads, args.context)
    if args.time_steps:
        return time_steps(model, args)
    if args.alone:
        return train_alone(model, args)

    import phalanx  # PYTHONPATH=build/python (phalanx launch --script sets it)

    peer = phalanx.Peer.from_env(dimension=sum(p.numel() for p in model.parameters()),
                                 topology=args.topology, config=args.config, id=args.id,
                                 out=args.out)
    shards, held_out = load_corpus(args.data, peer.peers)
    data = shards[peer.index]
    windows = validation_windows(held_out, args.eval_windows, args.context)

    inner = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    opt = phalanx.Optimizer(model.parameters(), peer, inner, every=args.every,
                            outer_lr=args.outer_lr, outer_momentum=args.outer_momentum)
    total_steps = peer.rounds * args.every
    lr = torch.optim.lr_scheduler.LambdaLR(opt, schedule(total_steps, args.warmup))
    generator = torch.Generator().manual_seed(100 + peer.id)
    step, compute = 0, 0.0
    diverged = False
    while not peer.finished:
        if peer.honest:
            started = time.perf_counter()
            x, y = sample(data, args.batch, args.context, generator)
            opt.zero_grad()
            loss = lm_loss(model, x, y)
            loss.backward()
            compute += time.perf_counter() - started
            opt.step(loss=loss.item())
            if not math.isfinite(loss.item()):
                diverged = True  # the mix took the model to inf or NaN
                break
        else:
            # A Byzantine peer's node sends its attack in place of the model: no compute spent.
            opt.step()
        lr.step()
        step += 1
        if peer.evaluation_due and peer.honest:  # every rounds.eval_every exchanges and the last
            m = metrics(evaluate(model, windows))
            peer.report(**m, local_steps=step, compute_seconds=compute)
            print(json.dumps({"peer": peer.id, "step": step, **m}), flush=True)
    peer.close()
    # launch's convention: 3 for a peer that diverged, whether its node or its loss saw it.
    sys.exit(3 if diverged else {"completed": 0, "diverged": 3}.get(peer.status, 1))


if __name__ == "__main__":
    main()
