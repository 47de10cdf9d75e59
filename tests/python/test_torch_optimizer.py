"""phalanx.Optimizer as torch code uses an optimizer: a torch.optim.Optimizer that LR schedulers
and add_param_group work on, that refuses a model moved away from its buffer, and a peer whose
report takes any named metric into the run's records. Also the package's surface: its version,
its exception names, its type stubs."""

import ast
import json
import os
import re
import sys
import threading
import types

import pytest
import torch

import phalanx
import phalanx.torch
from test_peer import CONFIG, Tiny, run_peers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_peers(complete_topology, config_file, n, rounds, out=""):
    topology = complete_topology(n, 0)
    config = config_file(CONFIG % ("mean", rounds))
    return [phalanx.Peer(topology, config, i, dimension=23, out=out) for i in range(n)]


def test_it_is_a_torch_optimizer_and_schedulers_drive_the_inner_lr(complete_topology,
                                                                   config_file):
    peers = make_peers(complete_topology, config_file, 2, 4)
    models, opts, schedulers = [], [], []
    for i in range(2):
        torch.manual_seed(i)
        model = Tiny()
        inner = torch.optim.SGD(model.parameters(), lr=0.1)
        opt = phalanx.Optimizer(model.parameters(), peers[i], inner)
        assert isinstance(opt, torch.optim.Optimizer)
        assert opt.param_groups is inner.param_groups and opt.state is inner.state
        models.append(model), opts.append(opt)
        schedulers.append(torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))

    def loop(peer):
        i = peer.id
        lrs = []
        for step in range(4):
            opts[i].zero_grad()
            loss = models[i](torch.ones(2, 4) * (step + 1)).pow(2).mean()
            loss.backward()
            opts[i].step(loss=loss.item())
            schedulers[i].step()
            lrs.append(opts[i].inner.param_groups[0]["lr"])
        peer.close()
        return lrs, opts[i].flat.clone()

    results = run_peers(peers, loop)
    # The scheduler's lr is the one the inner optimizer steps with.
    assert results[0][0] == pytest.approx([0.1, 0.05, 0.05, 0.025])
    assert torch.allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)  # still mixed
    # Its state is the inner optimizer's, through a checkpoint too.
    state = opts[0].state_dict()
    fresh = phalanx.Optimizer.__new__(phalanx.Optimizer)
    fresh.inner = torch.optim.SGD(Tiny().parameters(), lr=1.0)
    fresh.load_state_dict(state)
    assert fresh.steps == 4 and fresh.param_groups[0]["lr"] == pytest.approx(0.025)


def test_add_param_group_takes_exchanged_parameters_and_refuses_others(complete_topology,
                                                                      config_file):
    peer = make_peers(complete_topology, config_file, 2, 1)[0]
    model = Tiny()
    for p in model.a.parameters():  # a frozen backbone, exchanged all the same
        p.requires_grad_(False)
    inner = torch.optim.SGD(model.b.parameters(), lr=0.1)
    opt = phalanx.Optimizer(model.parameters(), peer, inner)
    assert model.a.weight.grad is None and model.b.weight.grad is not None
    opt.add_param_group({"params": list(model.a.parameters()), "lr": 0.01})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert len(inner.param_groups) == 2
    with pytest.raises(ValueError, match="not in the exchanged buffer"):
        opt.add_param_group({"params": [torch.nn.Parameter(torch.zeros(3))]})
    peer.close()


@pytest.mark.parametrize("move", ["double", "replace"])
def test_a_model_moved_after_wrapping_is_an_error_not_a_silent_stop(complete_topology,
                                                                   config_file, move):
    peer = make_peers(complete_topology, config_file, 2, 1)[0]
    model = Tiny()
    opt = phalanx.Optimizer(model.parameters(), peer, torch.optim.SGD(model.parameters(), lr=0.1))
    if move == "double":
        model.double()
    else:  # what model.to(other_device) does to every parameter
        model.a.weight.data = model.a.weight.data.clone()
    with pytest.raises(RuntimeError, match="no longer lives in the exchanged buffer"):
        opt.step()
    peer.close()


def test_report_takes_any_named_metric_into_the_records(complete_topology, config_file,
                                                       tmp_path):
    peers = make_peers(complete_topology, config_file, 2, 3, out=str(tmp_path))
    with pytest.raises(TypeError, match="perplexity is not a number"):
        peers[0].report(perplexity="high")

    def loop(peer):
        v = torch.full((23,), float(peer.id))
        for r in range(3):
            peer.exchange(v, loss=1.0)
            if peer.evaluation_due:
                peer.report(loss=2.5 - r, perplexity=12.25 / (r + 1), bits_per_char=1.5)
        peer.close()

    run_peers(peers, loop)
    records = [json.loads(line) for line in open(tmp_path / "node-0.jsonl")]
    last = records[-1]
    assert last["test_loss"] == 0.5 and "test_accuracy" not in last
    assert last["test_metrics"] == {"perplexity": pytest.approx(12.25 / 3),
                                    "bits_per_char": 1.5}


def test_the_package_surface():
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    assert phalanx.__version__ == re.search(r"project\(phalanx VERSION (\S+)", cmake).group(1)
    assert repr(phalanx.ConfigError("x")) == "ConfigError('x')"
    assert phalanx.ConfigError.__module__ == "phalanx" and issubclass(phalanx.ConfigError,
                                                                     ValueError)
    assert phalanx.Optimizer is phalanx.torch.Optimizer
    assert issubclass(phalanx.Optimizer, torch.optim.Optimizer)
    package = os.path.dirname(phalanx.__file__)
    assert os.path.exists(os.path.join(package, "py.typed"))
    # The stub of the C++ module names everything the module has, and nothing it lacks (the
    # module as the package loaded it: only python/phalanx imports it by name).
    core = sys.modules[phalanx._CorePeer.__module__]
    stub = ast.parse(open(os.path.join(package, "_phalanx.pyi")).read())
    top, peer_members = set(), set()
    for node in stub.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            if node.name == "Peer":
                peer_members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
    public = lambda obj: {n for n in dir(obj) if not n.startswith("_") or n == "__version__"}
    assert top == public(core)
    assert peer_members - {"__init__"} == public(core.Peer)


def test_overlap_exchanges_in_the_background_and_applies_the_mix_one_exchange_late(
        complete_topology, config_file, tmp_path):
    topology = complete_topology(2, 0)
    config = config_file((CONFIG % ("mean", 4)).replace("quorum: false}",
                                                         "quorum: false, eval_every: 2}"))
    peers = [phalanx.Peer(topology, config, i, dimension=23, out=str(tmp_path))
             for i in range(2)]
    gate = threading.Event()
    models, opts = [], []
    for i in range(2):
        model = Tiny()
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(i))  # peer 0 all zeros, peer 1 all ones: the mean is 0.5
        inner = torch.optim.SGD(model.parameters(), lr=0.0)  # no local progress: the mix shows
        models.append(model)
        opts.append(phalanx.Optimizer(model.parameters(), peers[i], inner, overlap=True))
    with pytest.raises(ValueError, match="overlap needs model exchange"):
        gradient = config_file((CONFIG % ("mean", 1)).replace("exchange: model",
                                                              "exchange: gradient"))
        phalanx.Optimizer(Tiny().parameters(),
                          phalanx.Peer(complete_topology(2, 0), gradient, 0, dimension=23,
                                       join_timeout_ms=100), None, overlap=True)

    def loop(peer):
        i = peer.id
        opt = opts[i]
        if i == 1:
            gate.wait(60)  # peer 1 starts only once peer 0's first step has returned
        answers, reported = [], []
        while not peer.finished:
            opt.zero_grad()
            models[i](torch.ones(1, 4)).sum().backward()
            opt.step(loss=1.0)
            if i == 0 and not gate.is_set():
                # Its exchange waits for peer 1, yet the step came back: it runs behind it.
                assert opt._thread is not None and opt._thread.is_alive()
                assert opt.last_status is None
                gate.set()
            if peer.evaluation_due:
                reported.append(opt.flat[0].item())
                peer.report(accuracy=0.5, loss=1.0)
            answers.append(opt.last_status)
        opt.synchronize()
        peer.close()
        return opt.flat.clone(), reported

    results = run_peers(peers, loop)
    for i in range(2):
        flat, reported = results[i]
        assert torch.allclose(flat, torch.full((23,), 0.5))  # the mix, corrected in
        assert reported and all(v == pytest.approx(0.5) for v in reported)
    records = [json.loads(line) for line in open(tmp_path / "node-0.jsonl")]
    assert len(records) == 4
    assert [r["round"] for r in records if "test_accuracy" in r] == [1, 3]


@pytest.mark.parametrize("nesterov", [True, False])
def test_the_outer_optimizer_steps_from_the_mix_with_momentum(complete_topology, config_file,
                                                              nesterov):
    """Two peers at 0 and 1 with no local progress: every exchange's mix is their mean; the
    outer step from each peer's x_start is DiLoCo's, computed here by hand alongside."""
    peers = make_peers(complete_topology, config_file, 2, 3)
    lr, mu = 0.5, 0.5
    models, opts = [], []
    for i in range(2):
        model = Tiny()
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(i))
        inner = torch.optim.SGD(model.parameters(), lr=0.0)
        models.append(model)
        opts.append(phalanx.Optimizer(model.parameters(), peers[i], inner, every=2,
                                      outer_lr=lr, outer_momentum=mu, nesterov=nesterov))

    def loop(peer):
        i = peer.id
        trace = []
        while not peer.finished:
            opts[i].zero_grad()
            models[i](torch.ones(1, 4)).sum().backward()
            opts[i].step()
            if opts[i].steps % 2 == 0 and opts[i].last_status == "mixed":
                trace.append(opts[i].flat[0].item())
        peer.close()
        return trace

    results = run_peers(peers, loop)
    x, v = [0.0, 1.0], [0.0, 0.0]
    expected = [[], []]
    for _ in range(3):
        mix = sum(x) / 2
        for i in range(2):
            delta = x[i] - mix
            v[i] = mu * v[i] + delta
            x[i] -= lr * (delta + mu * v[i] if nesterov else v[i])
            expected[i].append(x[i])
    for i in range(2):
        assert results[i] == pytest.approx(expected[i], rel=1e-6)
    # The defaults are the mix itself; an outer step needs model exchange without overlap.
    with pytest.raises(ValueError, match="outer optimizer steps from a mix of models"):
        model = Tiny()
        phalanx.Optimizer(model.parameters(), types.SimpleNamespace(dimension=23,
                                                                    exchange_mode="model"),
                          torch.optim.SGD(model.parameters(), lr=0.1), overlap=True,
                          outer_momentum=0.9)
    state = opts[0].state_dict()
    assert state["outer"]["velocity"][0].item() == pytest.approx(v[0], rel=1e-6)
