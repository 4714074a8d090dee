"""The ports a local cluster listens on: chosen free where none is given, all distinct, none of the
ports given (a test cluster once got its master's web UI and Spark Connect on one port, and its SQL
server stopped at start)."""

import pytest

from dbt.adapters.hiveopt import local_cluster, processes
from dbt.adapters.hiveopt.local_cluster import PORT_NAMES, ClusterSpec


class LowestFirst:
    """An operating system that hands out the lowest port no socket holds, as soon as it is free
    again: what the old one-port-at-a-time choice met by chance, every time."""

    held: set[int] = set()

    def __init__(self, *args):
        self.port = None

    def bind(self, address):
        self.port = next(p for p in range(40000, 41000) if p not in LowestFirst.held)
        LowestFirst.held.add(self.port)

    def getsockname(self):
        return ("127.0.0.1", self.port)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        LowestFirst.held.discard(self.port)


@pytest.fixture()
def lowest_first(monkeypatch):
    LowestFirst.held = set()
    monkeypatch.setattr(processes.socket, "socket", LowestFirst)


def test_free_ports_are_distinct_even_where_a_closed_port_comes_back(lowest_first):
    spec = ClusterSpec("/tmp/unused").with_ports()
    ports = [getattr(spec, name) for name in PORT_NAMES]
    assert len(set(ports)) == 4, ports


def test_free_ports_are_none_of_the_given_ones(lowest_first):
    spec = ClusterSpec("/tmp/unused", ui_port=40000, thrift_port=40002).with_ports()
    assert (spec.ui_port, spec.thrift_port) == (40000, 40002)
    assert {spec.master_port, spec.connect_port}.isdisjoint({40000, 40002}), spec
    assert spec.master_port != spec.connect_port


def test_free_ports_on_this_machine_are_distinct():
    assert all(len(set(processes.free_ports(8))) == 8 for _ in range(50))


def test_a_port_given_twice_is_refused_before_anything_starts(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(local_cluster, "start_daemon", lambda *args, **kwargs: started.append(args))
    spec = ClusterSpec(str(tmp_path), master_port=47077, ui_port=47077)
    with pytest.raises(RuntimeError, match="must differ"):
        local_cluster.up(spec, progress=lambda line: None)
    assert not started
