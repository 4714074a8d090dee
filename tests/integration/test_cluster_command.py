"""`hiveopt cluster up|status|down` as a user runs it, in processes of their own: up prints its
progress and the profile outputs, the printed Connect output answers `dbt debug`, status reports
what runs, down stops every pid; a SIGTERM to `up` while the JVMs start leaves no JVM behind.

A cluster of one worker (the suite's shared cluster has two) keeps this test's cost down."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from dbt.adapters.hiveopt.processes import Daemon, running

pytestmark = pytest.mark.integration
# 3 tests that start clusters and servers of their own (1.5 minutes): early, not last (conftest).
SEND_FIRST = True

HIVEOPT = os.path.join(os.path.dirname(sys.executable), "hiveopt")
SMALL = ["--workers", "1", "--worker-memory", "1g", "--driver-memory", "1g"]
FREE_PORTS = ["--master-port", "0", "--ui-port", "0", "--thrift-port", "0", "--connect-port", "0"]


def _pids(state_dir):
    with open(os.path.join(state_dir, "cluster.json")) as handle:
        return {d["name"]: d["pid"] for d in json.load(handle)["daemons"]}


def _down(state_dir):
    return subprocess.run([HIVEOPT, "cluster", "down", "--state-dir", state_dir], capture_output=True, text=True)


def test_up_status_down(tmp_path):
    state = str(tmp_path / "cluster")
    pids = {}
    try:
        up = subprocess.run(
            [HIVEOPT, "cluster", "up", "--state-dir", state, *SMALL, *FREE_PORTS], capture_output=True, text=True,
            timeout=400,
        )  # fmt: skip
        assert up.returncode == 0, up.stdout + up.stderr
        pids = _pids(state)
        print(up.stdout)
        # Each pid runs with the state folder on its command line: what `down` (and this test) checks.
        assert all(Daemon(name, pid, "", state).alive() for name, pid in pids.items()), pids
        assert set(pids) == {"master", "worker-1", "sql-server"}
        assert "master ready in" in up.stdout and "worker-1 registered in" in up.stdout
        assert "SQL server ready in" in up.stdout and "executor cores: 1" in up.stdout
        outputs = yaml.safe_load(up.stdout.split("under your profile's `outputs:`):", 1)[1].split("\n`hiveopt")[0])
        assert outputs["connect"]["method"] == "connect" and outputs["thrift"]["method"] == "thrift"

        # The printed Connect output, pasted into a profile, passes dbt debug.
        project = tmp_path / "project"
        project.mkdir()
        (project / "dbt_project.yml").write_text('name: p\nversion: "1.0"\nconfig-version: 2\nprofile: p\n')
        profile = {"p": {"target": "connect", "outputs": outputs}}
        (project / "profiles.yml").write_text(yaml.safe_dump(profile))
        dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
        debug = subprocess.run(
            [dbt, "debug", "--project-dir", str(project), "--profiles-dir", str(project)],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert debug.returncode == 0 and "OK connection ok" in debug.stdout, debug.stdout

        status = subprocess.run([HIVEOPT, "cluster", "status", "--state-dir", state], capture_output=True, text=True)
        assert status.returncode == 0 and "NOT running" not in status.stdout, status.stdout
        assert "1 workers alive" in status.stdout and "hiveopt-sql-server (1 cores)" in status.stdout
        assert f"connect 127.0.0.1:{outputs['connect']['port']}  listening" in status.stdout
    finally:
        down = _down(state)
    assert down.returncode == 0 and "stopped 3 processes" in down.stdout, down.stdout
    assert not [name for name, pid in pids.items() if Daemon(name, pid, "", state).alive()]
    assert not os.path.exists(os.path.join(state, "cluster.json"))


def test_sigterm_while_starting_stops_what_was_started(tmp_path):
    state = str(tmp_path / "cluster")
    process = subprocess.Popen(
        [HIVEOPT, "cluster", "up", "--state-dir", state, *SMALL, *FREE_PORTS],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("starting the SQL server"):
                break
        pids = _pids(state)  # master, the worker and the SQL server (still starting)
        assert len(pids) == 3, lines
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=120)
        _down(state)  # whatever `up` left behind, should the test fail: stopped by pid
    assert process.returncode == 1
    assert "stopping what was started" in rest and "interrupted" in rest, rest
    # A daemon is left if its pid runs with the state folder on its command line (pid_max is 32768
    # here: a bare pid can belong to another process, or a JVM thread, by then).
    daemons = {name: Daemon(name, pid, "", state) for name, pid in pids.items()}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(d.alive() for d in daemons.values()):
        time.sleep(0.5)
    left = [name for name, daemon in daemons.items() if daemon.alive()]
    for name in left:  # `up` forgot it (its state file is gone): stopped here, by pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pids[name], signal.SIGKILL)
    assert not left, (pids, rest)


def test_the_local_server_helper_stops_its_jvm_on_sigterm(tmp_path):
    """`python -m dbt.adapters.hiveopt.thrift_server`: one SQL server JVM in local mode, in a
    process group of its own; a SIGTERM to the Python wrapper stops the JVM too."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dbt.adapters.hiveopt.thrift_server", str(tmp_path / "server")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines, pid = [], None
    try:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("Thrift 127.0.0.1:"):
                pid = int(line.split("(pid ")[1].split(")")[0])
                break
        assert pid and running(pid), lines
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert not running(pid), "the JVM outlived its wrapper"
