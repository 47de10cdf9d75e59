"""The package installs the way Python users install things: `pip install .` into a fresh venv
through the in-tree backend (pyproject.toml, python/backend/phalanx_build.py), offline, and the
installed package and `phalanx` command work from there — not from the build tree."""

import json
import os
import subprocess
import sys

import pytest
from conftest import free_ports
from test_peer import CONFIG

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_pip_install_into_a_venv_then_import_and_run(tmp_path):
    binary = os.environ.get("PHALANX_BINARY")
    if not binary:
        pytest.skip("PHALANX_BINARY not set (ctest sets it)")
    build = os.path.dirname(os.path.abspath(binary))
    venv = tmp_path / "v"
    # The system's packages visible (torch, numpy): a user's venv for torch work has them too.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    # The build ./tools/test made, packed (not rebuilt): build-dir names it.
    done = subprocess.run(
        pip + ["install", "--no-index", "--no-build-isolation", ROOT,
               "--config-settings", f"build-dir={build}"],
        capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    probe = ("import json, phalanx, phalanx.torch, torch; "
             "print(json.dumps({'file': phalanx.__file__, 'version': phalanx.__version__, "
             "'optimizer': issubclass(phalanx.torch.Optimizer, torch.optim.Optimizer)}))")
    shown = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True,
                           text=True, env=env, cwd=tmp_path, check=True)
    got = json.loads(shown.stdout)
    assert got["file"].startswith(str(venv)), got  # the installed copy, not build/python
    assert got["optimizer"] is True
    version = subprocess.run([str(venv / "bin" / "phalanx"), "--version"], capture_output=True,
                             text=True, env=env, check=True)
    assert version.stdout.startswith(f"phalanx {got['version']}")
    # The installed `phalanx` launches script peers under the venv's interpreter (no
    # PYTHONPATH: the package is installed there).
    ports = free_ports(4)
    topology = tmp_path / "pair.yaml"
    topology.write_text("byzantine_budget: 0\nnodes:\n" + "".join(
        f'  - {{id: {i}, host: "127.0.0.1", port: {ports[i]}, metrics_port: {ports[2 + i]}}}\n'
        for i in range(2)) + "edges: [[0, 1]]\n")
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG % ("mean", 2))
    launched = subprocess.run(
        [str(venv / "bin" / "phalanx"), "launch", "--topology", str(topology), "--config",
         str(config), "--script", os.path.join(os.path.dirname(__file__), "tiny_train.py"),
         "--out", str(tmp_path / "run"), "--", "--steps", "2"],
        capture_output=True, text=True, env=env, timeout=300)
    assert launched.returncode == 0, launched.stdout[-3000:] + launched.stderr[-3000:]
    assert json.load(open(tmp_path / "run" / "summary.json"))["rounds"] == 2
    # Uninstalls cleanly: nothing of it left in the venv.
    subprocess.run(pip + ["uninstall", "-y", "phalanx"], check=True, capture_output=True,
                   env=env)
    assert not (venv / "bin" / "phalanx").exists()
