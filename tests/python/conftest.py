"""Fixtures for the Python package's tests: free loopback ports, topology and config files."""

import socket

import pytest


def free_ports(n):
    sockets, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


@pytest.fixture
def complete_topology(tmp_path):
    """complete_topology(n, budget) -> path of a complete graph on free loopback ports."""

    def make(n, budget, metrics=False):
        ports = free_ports(2 * n)
        lines = [f"byzantine_budget: {budget}", "nodes:"]
        for i in range(n):
            extra = f", metrics_port: {ports[n + i]}" if metrics else ""
            lines.append(f'  - {{id: {i}, host: "127.0.0.1", port: {ports[i]}{extra}}}')
        edges = [f"[{i}, {j}]" for i in range(n) for j in range(i + 1, n)]
        lines.append(f"edges: [{', '.join(edges)}]")
        path = tmp_path / f"complete-{n}.yaml"
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    return make


@pytest.fixture
def config_file(tmp_path):
    """config_file(text) -> path of a node config holding `text`."""

    def make(text):
        path = tmp_path / "config.yaml"
        path.write_text(text)
        return str(path)

    return make
