"""The embedded session's JVM starts from a class archive (HotSpot's class data sharing, CDS).

A new JVM loads and verifies some 20,000 classes of Spark, Hive's metastore and Derby before the
first statement: on this machine's two cores the embedded session took 11.7-12.4 s to answer
`show databases`, and 6.9-8.9 s with an archive of the classes a `dbt build` loaded (the example
project, 2026-11-30). Every dbt invocation starts such a JVM; dbt-spark's session does too.

The first `dbt run` or `dbt build` that finds no archive for this Java and this pyspark writes it:
its JVM dumps the classes it loaded as it exits (`-XX:ArchiveClassesAtExit`, 13-20 s, once), and
this process waits for that at its own exit, then moves the file into place. Other commands (`dbt
debug`, `seed`, `test`, `compile`...) start from the archive but never write it: an archive is not
written again while it is whole, and the one a `dbt debug` wrote was 134 MB of classes against a
build's 229 MB (the example project's builds from it: 47.2 and 53.8 s against 41.9 and 43.9 s from
a build's, 2026-12-01). A JVM that maps a cut-off archive dies (SIGBUS), so a file becomes the
archive only after its JVM exited with 0 and only from the process that watched it; a writer killed
on the way leaves a lock whose pid is gone and a `.part` that the next start removes. One writer at
a time (the lock); other processes meanwhile start as before. A JVM that cannot use an archive
(another build of Java, other jars) starts without it: HotSpot checks that itself. The archives
live in `$HIVEOPT_CLASS_ARCHIVE_DIR`, else `$XDG_CACHE_HOME/dbt-hiveopt`, else
`~/.cache/dbt-hiveopt` (about 230 MB each, beside a `<archive>.json` with its size, its jars'
folder and its java binary: one whose jars are gone, a removed virtualenv's, is removed when
another is written, and so is one of the same jars' folder and java that a new one replaces); the
profile's `class_archive: false` switches this off.

>>> plan = ArchivePlan(path="/c/spark-jvm-k.jsa", writing=False)
>>> plan.jvm_flags()
'-XX:SharedArchiveFile=/c/spark-jvm-k.jsa -Xshare:auto -Xlog:cds*=off -Xlog:class+path=off'
>>> own_archive_flags("-Xmx4g -XX:SharedArchiveFile=/x.jsa"), own_archive_flags("-Xmx4g")
(True, False)
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from dbt.adapters.hiveopt.processes import running, start_time

# The first bytes of a dynamic archive (HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, 0xf00baba8, little-endian).
DYNAMIC_ARCHIVE_MAGIC = b"\xa8\xab\x0b\xf0"

# How long a writer waits at its exit for its JVM to dump the classes and stop.
DUMP_TIMEOUT_SECONDS = 180.0

# HotSpot's own lines about the archive (a class it skips, an archive it cannot use) say nothing
# a dbt user can act on; its other warnings stay.
QUIET = "-Xlog:cds*=off -Xlog:class+path=off"

# JVM flags of a profile that manage class data sharing themselves: then hiveopt leaves it alone.
OWN_FLAGS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")


def own_archive_flags(flags: str) -> bool:
    return any(flag in flags for flag in OWN_FLAGS)


def archive_dir() -> str:
    given = os.environ.get("HIVEOPT_CLASS_ARCHIVE_DIR")
    if given:
        return os.path.abspath(given)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "dbt-hiveopt")


def java_executable() -> str | None:
    """The java that pyspark's spark-class runs: $JAVA_HOME/bin/java, else the one on PATH."""
    import shutil

    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def archive_key(java: str, spark_home: str) -> str:
    """What an archive is valid for: this java binary and the jars pyspark puts on the class path
    (names and sizes). A new Java or pyspark gets an archive of its own."""
    digest = hashlib.sha256()
    stat = os.stat(java)
    digest.update(f"{java}|{stat.st_size}|{int(stat.st_mtime)}".encode())
    jars = os.path.join(spark_home, "jars")
    digest.update(os.path.realpath(jars).encode())
    for name in sorted(os.listdir(jars)):
        digest.update(f"|{name}:{os.path.getsize(os.path.join(jars, name))}".encode())
    return digest.hexdigest()[:16]


@dataclass
class ArchivePlan:
    """The archive this process's JVM starts from (`writing` False), or dumps (`writing` True)."""

    path: str
    writing: bool
    # The pyspark jars it holds classes of, and the java binary: an archive whose jars are gone (a
    # removed virtualenv), or one of the same jars' folder and java binary that another archive
    # replaces (pyspark or Java upgraded in place), is removed when another is written.
    jars: str = ""
    java: str = ""

    @property
    def lock(self) -> str:
        return self.path + ".lock"

    @property
    def part(self) -> str:
        return f"{self.path}.{os.getpid()}.part"

    def jvm_flags(self) -> str:
        if self.writing:
            return f"-XX:ArchiveClassesAtExit={self.part} {QUIET}"
        return f"-XX:SharedArchiveFile={self.path} -Xshare:auto {QUIET}"

    def finish_at_exit(self, gateway: Any) -> None:
        """At this process's exit: end the JVM (its gateway's stdin closed, as pyspark's own end
        does), wait for its dump and move the archive into place."""
        atexit.register(self._finish, gateway)

    def give_up(self) -> None:
        """The JVM did not start with this plan: a writer's lock goes (the next start may write
        the archive), and so does an archive it could not start from."""
        if self.writing:
            _remove(self.part)
            _remove(self.lock)
        else:
            _remove(self.path)
            _remove(self.path + ".json")

    def _finish(self, gateway: Any) -> None:
        started = time.perf_counter()
        try:
            process = gateway.proc
            process.stdin.close()
            code = process.wait(timeout=DUMP_TIMEOUT_SECONDS)
            if code == 0 and is_archive(self.part):
                with open(self.path + ".json", "w") as handle:  # what is_archive checks
                    json.dump({"size": os.path.getsize(self.part), "jars": self.jars, "java": self.java}, handle)
                os.replace(self.part, self.path)
                remove_orphans(os.path.dirname(self.path), written=self)
                sys.stderr.write(
                    f"hiveopt: the Spark JVM's classes are kept in {self.path} for faster starts "
                    f"(written once, {time.perf_counter() - started:.1f} s)\n"
                )
        except Exception:  # the next start without an archive tries again
            pass
        finally:
            _remove(self.part)
            _remove(self.lock)


def is_archive(path: str, size_kept: bool = False) -> bool:
    """A dynamic archive whole: its magic, and (`size_kept`) the size its writer saw when its JVM
    had exited, in `<path>.json` (a cut-off archive kills the JVM that maps it)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != DYNAMIC_ARCHIVE_MAGIC or os.path.getsize(path) < 1024 * 1024:
                return False
        if size_kept:
            with open(path + ".json") as handle:
                return int(json.load(handle)["size"]) == os.path.getsize(path)
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def remove_orphans(directory: str, written: ArchivePlan | None = None) -> None:
    """Remove the archives whose pyspark jars no longer exist, and those `written` replaces: of
    the same jars' folder and java binary under another key, so the jars or the java changed in
    place (each is some 230 MB)."""
    for name in os.listdir(directory):
        if not (name.startswith("spark-jvm-") and name.endswith(".jsa.json")):
            continue
        kept = os.path.join(directory, name)
        archive = kept[: -len(".json")]
        try:
            with open(kept) as handle:
                facts = json.load(handle)
            jars, java = facts.get("jars"), facts.get("java")
        except (OSError, ValueError, AttributeError):
            continue
        replaced = (
            written is not None
            and archive != written.path
            and bool(jars and java)
            and (jars, java) == (written.jars, written.java)
        )
        if (jars and not os.path.isdir(jars)) or replaced:
            _remove(archive)
            _remove(kept)


def plan(directory: str, java: str | None, spark_home: str, may_write: bool = True) -> ArchivePlan | None:
    """Start from the archive if there is one; else write it, unless another process is writing
    it or `may_write` is False (None: start as before)."""
    if java is None:
        return None
    path = os.path.join(directory, f"spark-jvm-{archive_key(java, spark_home)}.jsa")
    jars = os.path.realpath(os.path.join(spark_home, "jars"))
    if is_archive(path, size_kept=True):
        return ArchivePlan(path, writing=False, jars=jars, java=java)
    if not may_write:
        return None
    os.makedirs(directory, exist_ok=True)
    for _ in range(2):  # a second try after removing a dead writer's lock
        try:
            handle = os.open(path + ".lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            writer, started = _lock_writer(path + ".lock")
            # A writer at work, or one still writing its pid in the lock.
            busy = _same_process(writer, started) if writer is not None else _age(path + ".lock") < 10
            if busy:
                return None
            _remove(path + ".lock")
            if writer is not None:
                _remove(f"{path}.{writer}.part")
            continue
        with os.fdopen(handle, "w") as lock:
            lock.write(f"{os.getpid()} {start_time(os.getpid()) or ''}".strip())
        # Looked at again under the lock: a writer may have moved its archive into place since the
        # look above (it holds the lock until then), and that one is whole.
        if is_archive(path, size_kept=True):
            _remove(path + ".lock")
            return ArchivePlan(path, writing=False, jars=jars, java=java)
        _remove(path)  # cut off, or of a writer before the size was kept
        return ArchivePlan(path, writing=True, jars=jars, java=java)
    return None


def _lock_writer(lock: str) -> tuple[int | None, str | None]:
    """The pid in a lock, and when that process started (None: not written, or not known)."""
    try:
        with open(lock) as handle:
            words = handle.read().split()
        return int(words[0]), (words[1] if len(words) > 1 else None)
    except (OSError, ValueError, IndexError):
        return None, None


def _same_process(pid: int, started: str | None) -> bool:
    """The lock's writer still runs: its pid, and (where the lock says) its start time, so that
    an unrelated process given a dead writer's pid does not hold the lock."""
    return running(pid) and (started is None or start_time(pid) == started)


def _age(path: str) -> float:
    try:
        return time.time() - os.path.getmtime(path)
    except OSError:
        return float("inf")


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
