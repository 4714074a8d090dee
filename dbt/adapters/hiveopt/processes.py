"""Java daemons started from the pyspark package, each in a process group of its own, waited for
on a loopback port with a progress line, and stopped by pid (the group: a Spark worker's executors
go with it).

A daemon's pid is only signalled while /proc says it is still the process that was started (its
command line names the state folder), so a stale state file never stops an unrelated process.

>>> command_line_matches(os.getpid(), "no-such-marker-9f2c")
False
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

Progress = Callable[[str], None]
# How often a waiting start says what the JVM is doing (the last line of its log).
PROGRESS_EVERY_SECONDS = 10.0
STOP_GRACE_SECONDS = 30.0


def make_ignored_folder(path: str, what: str) -> None:
    """Create `path`, ignored by git from the inside: a `.gitignore` holding `*` in the folder
    itself (as pytest and ruff do with their caches) keeps it out of `git status` without editing
    the project's own .gitignore. `what`: the comment saying what the folder holds."""
    os.makedirs(path, exist_ok=True)
    ignore = os.path.join(path, ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w") as handle:
            handle.write(f"# written by {what}\n*\n")


def spark_home() -> str:
    """The Spark distribution inside the installed pyspark package (bin/spark-class, jars/)."""
    import pyspark

    return os.path.dirname(pyspark.__file__)


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on loopback."""
    return free_ports(1)[0]


def free_ports(count: int, taken: Iterable[int] = ()) -> list[int]:
    """`count` distinct TCP ports nothing listens on at the moment, on loopback, none of `taken`.
    Every socket stays bound until all are chosen: ports asked for one at a time, each socket
    closed at once, can come back the same (a test cluster got its master's web UI and Spark
    Connect on one port, and its SQL server stopped at start).

    >>> ports = free_ports(20)
    >>> len(set(ports)) == 20
    True
    >>> free_ports(3, taken=ports[:5])[0] in ports[:5]
    False
    """
    excluded = set(taken)
    with contextlib.ExitStack() as bound:
        chosen: list[int] = []
        while len(chosen) < count:
            sock = bound.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            if port not in excluded:  # bound either way: not handed out again
                chosen.append(port)
        return chosen


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


def command_line_matches(pid: int, marker: str) -> bool:
    """Whether process `pid` runs and its command line contains `marker` (pids are reused)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return marker.encode() in handle.read()
    except OSError:
        return False


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child that exited but was not reaped yet is a zombie: not running.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat), None where that is not
    known: with its pid it names one process, as a pid alone does not once the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class Daemon:
    """One started JVM: its name, pid (also its process group), log, and the marker its command
    line carries."""

    name: str
    pid: int
    log: str
    marker: str

    def alive(self) -> bool:
        return running(self.pid) and command_line_matches(self.pid, self.marker)

    def log_tail(self, lines: int = 30) -> str:
        try:
            with open(self.log, errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace: float = STOP_GRACE_SECONDS, own_child: bool = False) -> bool:
        """SIGTERM to its process group, SIGKILL after `grace` seconds. False if it was not running
        (or its pid now belongs to another program, which is left alone). `own_child`: this
        process started it and has not reaped it, so the pid is still its own and the command
        line is not checked (while spark-class execs the JVM it can read empty, and a JVM that
        was starting outlived an interrupted `hiveopt cluster up`)."""
        if not (_running_child(self.pid) if own_child else self.alive()):
            return False
        _signal_group(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            _reap(self.pid)
            if not running(self.pid):
                return True
            time.sleep(0.2)
        _signal_group(self.pid, signal.SIGKILL)
        for _ in range(50):
            _reap(self.pid)
            if not running(self.pid):
                break
            time.sleep(0.2)
        return True

    def to_dict(self) -> dict:
        return {"name": self.name, "pid": self.pid, "log": self.log, "marker": self.marker}


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _running_child(pid: int) -> bool:
    """Whether `pid` is a child of this process that has not exited (its pid is still its own)."""
    try:
        exited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not a child of this process, or already reaped
        return False
    return exited == 0


def _reap(pid: int) -> None:
    """Collect the exit status of a child of this process (else it lingers as a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def start_daemon(name: str, command: list[str], log: str, marker: str, cwd: str, env: dict[str, str]) -> Daemon:
    """Start `command` in a session of its own (so one signal to its group reaches everything it
    starts), output to `log`. spark-class ends in `exec java`: the pid is the JVM's."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
            start_new_session=True,
        )  # fmt: skip
    return Daemon(name, process.pid, log, marker)


def last_log_line(daemon: Daemon) -> str:
    """The JVM's last log line without its time stamp: what it is doing now, for a progress line."""
    for line in reversed(daemon.log_tail(5).splitlines()):
        line = line.strip()
        if line:
            # "25/11/25 09:01:02 INFO HiveUtils: Initializing ..." -> "HiveUtils: Initializing ..."
            parts = line.split(" ", 3)
            text = parts[3] if len(parts) == 4 and parts[2] in ("INFO", "WARN", "ERROR") else line
            return text[:110]
    return "starting the JVM"


def wait_until(
    daemon: Daemon,
    ready: Callable[[], bool],
    what: str,
    timeout: float,
    progress: Progress,
) -> float:
    """Wait for `ready()` while the daemon runs; a line every PROGRESS_EVERY_SECONDS says how long
    it has been and what the JVM logs. Returns the seconds it took; raises with the log's tail if
    the daemon exits or the time runs out."""
    started = time.monotonic()
    next_report = started + PROGRESS_EVERY_SECONDS
    while True:
        if ready():
            return time.monotonic() - started
        _reap(daemon.pid)
        if not running(daemon.pid):
            raise RuntimeError(f"{daemon.name} exited before {what}; the end of {daemon.log}:\n{daemon.log_tail()}")
        now = time.monotonic()
        if now - started > timeout:
            raise RuntimeError(f"{daemon.name}: no {what} after {timeout:.0f} s; the end of {daemon.log}:\n"
                               f"{daemon.log_tail()}")  # fmt: skip
        if now >= next_report:
            progress(f"  {daemon.name}: waiting for {what} ({now - started:.0f} s): {last_log_line(daemon)}")
            next_report = now + PROGRESS_EVERY_SECONDS
        time.sleep(0.5)
