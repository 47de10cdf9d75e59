"""phalanx.Peer: the C++ node driven by Python training loops — exact mixes over real TCP,
Byzantine peers, bad input that names what is wrong, and the torch optimizer."""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import phalanx
import phalanx.torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG = """
seed: 3
exchange: model
mixing: {rule: %s}
compression: {codec: none, gamma: 1.0}
rounds: {count: %d, deadline_ms: 10000, quorum: false}
security: {mode: none}  # peers in one process; the TLS path is test_launch_script's
"""


def run_peers(peers, loop):
    """Runs loop(peer) for every peer on its own thread (exchange releases the GIL)."""
    results, errors = {}, []

    def body(p):
        try:
            results[p.id] = loop(p)
        except Exception as e:  # reported below, with the peer
            errors.append((p.id, e))

    threads = [threading.Thread(target=body, args=(p,)) for p in peers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads), "a peer's loop hung"
    return results


def test_three_peers_mix_exactly_the_mean(complete_topology, config_file, tmp_path):
    topology = complete_topology(3, 0)
    config = config_file(CONFIG % ("mean", 2))
    out = tmp_path / "run"
    peers = [phalanx.Peer(topology, config, i, dimension=4, out=str(out)) for i in range(3)]

    def loop(p):
        seen = []
        for r in range(3):  # one more than the run: answered "finished", vector unchanged
            v = np.full(4, (r + 1) * (p.id + 1), dtype=np.float32)
            status = p.exchange(v, loss=0.5)
            seen.append((status, v.tolist()))
        p.close()
        return seen

    results = run_peers(peers, loop)
    for i in range(3):
        assert results[i][0] == ("mixed", [2.0] * 4)  # (1 + 2 + 3) / 3
        assert results[i][1] == ("mixed", [4.0] * 4)
        assert results[i][2] == ("finished", [3.0 * (i + 1)] * 4)
        assert peers[i].status == "completed"
        assert peers[i].rounds_mixed == 2
        assert (peers[i].peers, peers[i].index) == (3, i)
        records = [json.loads(line) for line in open(out / f"node-{i}.jsonl")]
        assert [r["round"] for r in records] == [0, 1]
        assert records[0]["train_loss"] == 0.5
        final = np.load(out / f"node-{i}.npy")
        assert final.tolist() == [4.0] * 4


def test_each_peers_mix_is_the_cpp_rule_on_the_same_vectors(complete_topology, config_file,
                                                            tmp_path):
    # NNA with b = 1 on four honest peers, one of them far off: each peer's mix must be what
    # `phalanx lab aggregate` (the same rule, its own vector as the pivot) makes of the rows.
    binary = os.environ.get("PHALANX_BINARY")
    if not binary:
        pytest.skip("PHALANX_BINARY not set (ctest sets it)")
    topology = complete_topology(4, 1)
    config = config_file(CONFIG % ("nna", 1))
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((4, 50)).astype(np.float32)
    vectors[3] += 4.0
    peers = [phalanx.Peer(topology, config, i, dimension=50) for i in range(4)]

    def loop(p):
        v = vectors[p.id].copy()
        assert p.exchange(v) == "mixed"
        p.close()
        return v

    results = run_peers(peers, loop)
    for i in range(4):
        rows = np.stack([vectors[i]] + [vectors[j] for j in range(4) if j != i])
        np.save(tmp_path / "rows.npy", rows)
        subprocess.run([binary, "lab", "aggregate", "--rule", "nna", "--b", "1", "--pivot", "0",
                        "--in", str(tmp_path / "rows.npy"), "--out", str(tmp_path / "z.npy")],
                       check=True, capture_output=True)
        np.testing.assert_array_equal(results[i], np.load(tmp_path / "z.npy"))


def test_a_byzantine_python_peer_is_passed_over_and_excluded(complete_topology, config_file,
                                                            tmp_path):
    topology = complete_topology(4, 1)
    config = config_file(CONFIG % ("nna", 2))
    sets = ["byzantine.3.attack=signflip"]
    peers = [phalanx.Peer(topology, config, i, dimension=3, sets=sets, out=str(tmp_path))
             for i in range(4)]
    assert [p.role for p in peers] == ["honest"] * 3 + ["vector_attack"]
    assert not peers[3].honest

    def loop(p):
        v = np.full(3, p.id + 1.0, dtype=np.float32)
        status = p.exchange(v)
        p.exchange(v)
        p.close()
        return status, v.tolist()

    results = run_peers(peers, loop)
    for i in range(3):
        assert results[i][0] == "mixed"
    # Its vector is neither used nor changed. Its rounds run on the honest peers' pace, not its
    # script's: whether its round 0 ended before the script handed the vector in is a race,
    # answered "passed" (a later round ended) or "finished" (none was left).
    assert results[3][0] in ("passed", "finished")
    assert results[3][1] == [4.0] * 3
    for i in range(3):
        record = json.loads(open(tmp_path / f"node-{i}.jsonl").readline())
        assert record["excluded"] == [3]


def test_bad_input_names_what_is_wrong(complete_topology, config_file, tmp_path):
    topology = complete_topology(2, 0)
    config = config_file(CONFIG % ("mean", 1))
    bad = config_file("mixing: {rule: nonesuch}\n")
    with pytest.raises(ValueError, match=r"config.yaml: mixing.rule"):
        phalanx.Peer(topology, bad, 0, dimension=3)
    with pytest.raises(ValueError, match="no such node"):
        phalanx.Peer(topology, config_file(CONFIG % ("mean", 1)), 7, dimension=3)
    with pytest.raises(ValueError, match="dimension"):
        phalanx.Peer(topology, config, 0, dimension=0)
    peer = phalanx.Peer(topology, config, 0, dimension=3, join_timeout_ms=100)
    with pytest.raises(TypeError, match="float32"):
        peer.exchange(np.zeros(3, dtype=np.float64))
    with pytest.raises(ValueError, match="not contiguous"):
        peer.exchange(np.zeros(6, dtype=np.float32)[::2])
    with pytest.raises(ValueError, match="3"):
        peer.exchange(np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError, match="read-only|writable"):
        frozen = np.zeros(3, dtype=np.float32)
        frozen.flags.writeable = False
        peer.exchange(frozen)
    peer.close()
    assert peer.status == "incomplete"
    with pytest.raises(RuntimeError, match="closed"):
        peer.exchange(np.zeros(3, dtype=np.float32))
    with pytest.raises(RuntimeError, match="closed"):
        peer.report(0.5, 1.0)
    peer.close()  # twice is harmless


def test_from_env_needs_the_launchers_variables(monkeypatch):
    for v in ("PHALANX_TOPOLOGY", "PHALANX_CONFIG", "PHALANX_ID"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(ValueError, match="PHALANX_TOPOLOGY"):
        phalanx.Peer.from_env(dimension=3)
    # A script's unset options (None, "") are no overrides: still not enough to make a peer.
    with pytest.raises(ValueError, match="PHALANX_TOPOLOGY"):
        phalanx.Peer.from_env(dimension=3, topology=None, config="", id=None)


torch = pytest.importorskip("torch")


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 3)
        self.b = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


@pytest.mark.parametrize("exchange,every", [("model", 1), ("model", 10), ("gradient", 1)])
def test_torch_optimizer_keeps_the_model_in_one_buffer_and_mixes_it(
        complete_topology, config_file, exchange, every):
    topology = complete_topology(3, 0)
    steps = 5 * every
    config = config_file((CONFIG % ("mean", 5)).replace("exchange: model", f"exchange: {exchange}"))
    models, opts, peers = [], [], []
    for i in range(3):
        torch.manual_seed(i)  # different initial models: only the mix can make them agree
        model = Tiny()
        n = sum(p.numel() for p in model.parameters())
        peer = phalanx.Peer(topology, config, i, dimension=n)
        inner = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        opt = phalanx.torch.Optimizer(model.parameters(), peer, inner, every=every)
        flat = opt.flat
        for p in model.parameters():  # views into the flat buffer: no copy per step
            assert flat.data_ptr() <= p.data_ptr() < flat.data_ptr() + 4 * flat.numel()
        models.append(model), opts.append(opt), peers.append(peer)
    starts = [opt.flat.clone() for opt in opts]

    def loop(peer):
        i = peer.id
        g = torch.Generator().manual_seed(10 + i)
        for step in range(steps):
            x = torch.randn(8, 4, generator=g)
            opts[i].zero_grad()
            loss = models[i](x).pow(2).mean()
            loss.backward()
            opts[i].step(loss=loss.item())
            # every = 10: nine local steps, then the exchange.
            assert opts[i].last_status == (None if step + 1 < every else "mixed")
        assert peer.rounds_mixed == 5
        peer.close()
        return opts[i].flat.clone()

    results = run_peers(peers, loop)
    assert peers[0].exchange_mode == exchange
    close = lambda a, b: torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    agree = [close(results[0], results[i]) for i in (1, 2)]
    if exchange == "model":
        # Complete graph, mean, gamma 1: every peer holds the same mix after every round (up
        # to the order each one sums in).
        assert agree == [True, True]
    else:
        # The models started apart and every peer applied the same aggregated gradients: they
        # moved by the same displacement and stay apart.
        assert agree == [False, False]
        moved = [results[i] - starts[i] for i in range(3)]
        assert close(moved[0], moved[1]) and close(moved[0], moved[2])
        assert moved[0].abs().max() > 1e-3
    for opt in opts:
        assert torch.isfinite(opt.flat).all()


def test_torch_tensor_bad_input(complete_topology, config_file):
    peer = phalanx.Peer(complete_topology(2, 0), config_file(CONFIG % ("mean", 1)), 0,
                        dimension=4, join_timeout_ms=100)
    with pytest.raises(TypeError, match="float32"):
        peer.exchange(torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="contiguous"):
        peer.exchange(torch.zeros(4, 2)[:, 0])
    with pytest.raises(ValueError, match="parameters"):
        phalanx.torch.Optimizer(Tiny().parameters(), peer, None)
    with pytest.raises(ValueError, match="every"):
        phalanx.torch.Optimizer([torch.zeros(4, requires_grad=True)], peer, None, every=0)
    peer.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_mix_like_cpu_ones(complete_topology, config_file):
    topology = complete_topology(2, 0)
    config = config_file(CONFIG % ("mean", 1))
    peers = [phalanx.Peer(topology, config, i, dimension=5) for i in range(2)]

    def loop(p):
        v = torch.full((5,), float(p.id + 1), device="cuda")
        status = p.exchange(v)
        p.close()
        return status, v.cpu().tolist()

    results = run_peers(peers, loop)
    assert results[0] == results[1] == ("mixed", [1.5] * 5)


def launch_command(topology, config, out, *options, script_args=()):
    """`phalanx launch --script tiny_train.py` (skips the test where ctest did not say where
    the binary is)."""
    binary = os.environ.get("PHALANX_BINARY")
    if not binary:
        pytest.skip("PHALANX_BINARY not set (ctest sets it)")
    script = os.path.join(os.path.dirname(__file__), "tiny_train.py")
    return [binary, "launch", "--topology", topology, "--config", config, *options, "--script",
            script, "--python", sys.executable, "--out", str(out), "--", *script_args]


def test_launch_script_runs_every_peer_and_reports(complete_topology, config_file, tmp_path):
    topology = complete_topology(4, 1, metrics=True)
    config = config_file(CONFIG % ("nna", 6))
    out = tmp_path / "launch"
    done = subprocess.run(
        launch_command(topology, config, out, "--byzantine", "3", "--attack", "alie",
                       script_args=("--steps", "100")),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.load(open(out / "summary.json"))
    assert summary["crashed"] == []
    records = [json.loads(line) for line in open(out / "node-0.jsonl")]
    assert len(records) == 6
    assert records[-1]["excluded"] == [3]
    assert records[-1]["test_accuracy"] == pytest.approx(0.5)  # what tiny_train.py reports


def test_launch_script_exports_torchs_rank_variables(complete_topology, config_file, tmp_path):
    topology = complete_topology(3, 0, metrics=True)
    config = config_file(CONFIG % ("mean", 2))
    done = subprocess.run(
        launch_command(topology, config, tmp_path / "run", "--gpus", "5,7",
                       script_args=("--steps", "2", "--write-env", str(tmp_path))),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    envs = [json.load(open(tmp_path / f"env-{i}.json")) for i in range(3)]
    assert envs == [{"RANK": str(i), "WORLD_SIZE": "3", "LOCAL_RANK": str(i),
                     "LOCAL_WORLD_SIZE": "3", "CUDA_VISIBLE_DEVICES": ["5", "7"][i % 2]}
                    for i in range(3)]


def test_sigterm_to_launch_ends_every_script_peer(complete_topology, config_file, tmp_path):
    topology = complete_topology(3, 0, metrics=True)
    config = config_file(CONFIG % ("mean", 1000000))
    out = tmp_path / "run"
    launch = subprocess.Popen(
        launch_command(topology, config, out, script_args=("--steps", "100000000")),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Every script peer up and gossiping: each has logged rounds.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(os.path.exists(out / f"node-{i}.jsonl") and os.path.getsize(out / f"node-{i}.jsonl")
               for i in range(3)):
            break
        assert launch.poll() is None, launch.stdout.read()[-3000:]
        time.sleep(0.2)
    pids = [int(p) for p in json.load(open(out / "pids.json")).values()]
    assert len(pids) == 3 and all(alive(p) for p in pids)
    launch.send_signal(signal.SIGTERM)
    output, _ = launch.communicate(timeout=60)
    assert launch.returncode != 0  # interrupted: not a finished run
    assert "interrupted" in output
    assert not any(alive(p) for p in pids), output[-3000:]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by a parent that is gone) is not running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def launch_example(complete_topology, name, data, package, out, launch_args, script_args):
    """examples/NAME.py under `phalanx launch` with examples/NAME.yaml: 4 peers on a complete
    graph (b = 1), peer 3 running ALIE. Skips without the binary or the example's data (a file
    of the Debian package `package`)."""
    binary = os.environ.get("PHALANX_BINARY")
    if not binary:
        pytest.skip("PHALANX_BINARY not set (ctest sets it)")
    if not os.path.exists(data):
        pytest.skip(f"the Debian package {package} is not installed")
    examples = os.path.join(ROOT, "examples")
    done = subprocess.run(
        [binary, "launch", "--topology", complete_topology(4, 1, metrics=True),
         "--config", os.path.join(examples, name + ".yaml"), "--byzantine", "3",
         "--attack", "alie", "--script", os.path.join(examples, name + ".py"),
         "--python", sys.executable, "--out", str(out)] + launch_args + ["--"] + script_args,
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.parametrize("overlap", [False, True])
def test_the_cnn_example_trains_under_launch(complete_topology, tmp_path, overlap):
    """examples/fmnist_cnn.py as the README runs it, shortened: 4 peers, one ALIE; and with the
    exchange overlapped with the next step."""
    out = tmp_path / "cnn"
    launch_example(complete_topology, "fmnist_cnn", "/usr/share/datasets/fashion-mnist/"
                   "train-images-idx3-ubyte.gz", "dataset-fashion-mnist", out,
                   ["--rounds", "30", "--set", "rounds.eval_every=10",
                    "--set", "rounds.deadline_ms=60000"], ["--overlap"] if overlap else [])
    summary = json.load(open(out / "summary.json"))
    assert summary["crashed"] == [] and summary["diverged"] == []
    assert summary["rounds"] == 30
    # Thirty steps of batch 32 take the CNN well past chance (0.1) on the full test set (0.43
    # when written), and the three honest peers end on nearly the same mixed model.
    assert summary["honest_accuracy_min"] > 0.3
    assert summary["honest_accuracy_max"] - summary["honest_accuracy_min"] < 0.02
    evaluated = [json.loads(line) for line in open(out / "node-0.jsonl")]
    assert [r["round"] for r in evaluated if "test_accuracy" in r] == [9, 19, 29]


def test_the_language_model_example_trains_under_launch(complete_topology, tmp_path):
    """examples/char_lm.py as examples/char_lm_grid.py runs it, shortened and shrunk: 4 peers,
    one ALIE, models mixed every 3 local steps with QSGD 8-bit replicas; then the grid's table
    over that run."""
    out = tmp_path / "lm"
    tiny = ["--dim", "32", "--layers", "1", "--heads", "2", "--context", "16", "--batch", "4",
            "--eval-windows", "32"]
    launch_example(complete_topology, "char_lm", "/usr/share/wordnet/data.noun", "wordnet-base",
                   out, ["--rounds", "6", "--set", "rounds.eval_every=3",
                         "--set", "compression.codec=qsgd", "--set", "compression.bits=8"],
                   ["--every", "3"] + tiny)
    summary = json.load(open(out / "summary.json"))
    assert summary["crashed"] == [] and summary["diverged"] == [] and summary["rounds"] == 6
    metrics = summary["honest_metrics"]
    # 18 local steps take the byte model well below the uniform guess, ln 256 = 5.55 nats.
    assert metrics["test_loss"]["max"] < math.log(256) - 0.3
    assert metrics["local_steps"]["min"] == metrics["local_steps"]["max"] == 18
    records = [json.loads(line) for line in open(out / "node-0.jsonl")]
    evaluated = [r for r in records if "test_loss" in r]
    assert [r["round"] for r in evaluated] == [2, 5]
    for r in evaluated:  # the script's figures, consistent with each other
        m = r["test_metrics"]
        assert m["perplexity"] == pytest.approx(math.exp(r["test_loss"]), rel=1e-9)
        assert m["bits_per_byte"] == pytest.approx(r["test_loss"] / math.log(2), rel=1e-9)
    # QSGD 8-bit replicas: the bytes sent are a fraction of the dense model's.
    assert 0 < records[-1]["bytes_sent_total"] < 0.6 * records[-1]["dense_bytes_total"]

    # The grid's report over this run, as the run it names.
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import char_lm_grid
    finally:
        sys.path.pop(0)
    grid = tmp_path / "grid"
    os.makedirs(grid)
    os.rename(out, grid / "nna-q8-h30-alie")
    (grid / "nna-q8-h30-alie" / "wall.json").write_text('{"seconds": 12.0, "every": 3}')
    (grid / "step.json").write_text('{"step_seconds": 0.5}')
    args = argparse.Namespace(out=str(grid), latency_ms=50.0, rate_mbit=100.0)
    row = char_lm_grid.read_run(args, "nna-q8-h30-alie", 0.5)
    assert row["loss_mean"] == pytest.approx(metrics["test_loss"]["mean"], rel=1e-9)
    assert row["loss_worst"] == pytest.approx(metrics["test_loss"]["max"], rel=1e-9)
    # The simulated-WAN clock of an honest peer after its 6 rounds: 6 x 3 steps at 0.5 s, 6
    # latencies of 50 ms, every byte it sent at 100 Mbit/s; the curve holds the honest mean.
    sent = [[json.loads(line) for line in open(grid / "nna-q8-h30-alie" / f"node-{k}.jsonl")]
            [-1]["bytes_sent_total"] for k in range(3)]
    assert row["curve"][-1][1] == pytest.approx(
        sum(6 * 3 * 0.5 + 6 * 0.05 + b * 8 / 1e8 for b in sent) / 3, rel=1e-9)
    assert row["curve"][-1][0] == pytest.approx(sum(sent) / 3, rel=1e-9)
    char_lm_grid.report(args)
    table = (grid / "results.md").read_text()
    assert "| models every 3 steps, QSGD 8-bit replicas | nna | alie |" in table
