"""The class archive's life: one writer at a time, a file becomes the archive only after its JVM
exited with 0, a cut-off archive is never started from. A child process stands in for the JVM
(it dumps at its exit as the JVM does, after its stdin closes); the real JVM's part is in
tests/integration/test_class_archive_with_dbt.py."""

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

from dbt.adapters.hiveopt import class_archive
from dbt.adapters.hiveopt.class_archive import DYNAMIC_ARCHIVE_MAGIC, archive_key, is_archive, plan


def _spark_home(tmp_path):
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"x" * 10)
    (tmp_path / "java").write_bytes(b"java")
    return str(tmp_path / "java"), str(tmp_path / "spark")


def _stand_in_jvm(part: str, code: int) -> subprocess.Popen:
    """A process that, once its stdin closes, writes an archive of 2 MB to `part` and exits with `code`."""
    script = textwrap.dedent(f"""
        import sys
        sys.stdin.read()
        with open({part!r}, "wb") as f:
            f.write({DYNAMIC_ARCHIVE_MAGIC!r} + bytes(2 * 1024 * 1024))
        sys.exit({code})
        """)
    return subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)


def test_the_first_start_writes_and_a_second_start_meanwhile_runs_without(tmp_path):
    java, spark = _spark_home(tmp_path)
    first = plan(str(tmp_path / "cache"), java, spark)
    assert first is not None and first.writing
    assert open(first.lock).read().split()[0] == str(os.getpid())
    assert f"-XX:ArchiveClassesAtExit={first.part}" in first.jvm_flags()
    assert plan(str(tmp_path / "cache"), java, spark) is None  # the writer (this process) lives


def test_a_start_that_may_not_write_takes_no_lock_and_still_reads_a_written_archive(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    assert plan(cache, java, spark, may_write=False) is None
    assert not os.path.exists(cache)  # no lock taken, nothing made
    writer = plan(cache, java, spark)
    writer._finish(SimpleNamespace(proc=_stand_in_jvm(writer.part, 0)))
    reader = plan(cache, java, spark, may_write=False)
    assert reader is not None and not reader.writing and reader.path == writer.path


def test_an_archive_becomes_one_only_after_its_jvm_exited_with_0(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    writer = plan(cache, java, spark)
    writer._finish(SimpleNamespace(proc=_stand_in_jvm(writer.part, 0)))
    assert is_archive(writer.path, size_kept=True)
    assert not os.path.exists(writer.lock) and not os.path.exists(writer.part)
    reader = plan(cache, java, spark)
    assert reader is not None and not reader.writing
    assert reader.jvm_flags().startswith(f"-XX:SharedArchiveFile={writer.path} -Xshare:auto")


def test_an_archive_moved_into_place_after_the_first_look_is_used_not_removed(tmp_path, monkeypatch):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    writer = plan(cache, java, spark)
    writer._finish(SimpleNamespace(proc=_stand_in_jvm(writer.part, 0)))
    looks = []

    def first_look_misses(path, size_kept=False):  # the writer moved it in just after this look
        looks.append(path)
        return len(looks) > 1 and is_archive(path, size_kept)

    monkeypatch.setattr(class_archive, "is_archive", first_look_misses)
    reader = plan(cache, java, spark)
    assert reader is not None and not reader.writing and len(looks) == 2
    assert os.path.exists(writer.path) and not os.path.exists(writer.lock)


def test_a_jvm_that_failed_its_dump_leaves_no_archive_and_no_lock(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    writer = plan(cache, java, spark)
    writer._finish(SimpleNamespace(proc=_stand_in_jvm(writer.part, 1)))
    assert not os.path.exists(writer.path) and not os.path.exists(writer.part)
    assert not os.path.exists(writer.lock)
    assert plan(cache, java, spark).writing  # the next start tries again


def test_a_lock_whose_pid_now_names_another_process_is_cleared(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    path = os.path.join(cache, f"spark-jvm-{archive_key(java, spark)}.jsa")
    os.makedirs(cache)
    with open(path + ".lock", "w") as handle:  # this process's pid, but another start time: a reused pid
        handle.write(f"{os.getpid()} 1")
    writer = plan(cache, java, spark)
    assert writer is not None and writer.writing


def test_a_dead_writers_lock_and_part_are_cleared(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    path = os.path.join(cache, f"spark-jvm-{archive_key(java, spark)}.jsa")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    os.makedirs(cache)
    with open(path + ".lock", "w") as handle:
        handle.write(str(dead))
    with open(f"{path}.{dead}.part", "wb") as handle:  # a dump the writer never saw end
        handle.write(DYNAMIC_ARCHIVE_MAGIC + bytes(2 * 1024 * 1024))
    writer = plan(cache, java, spark)
    assert writer is not None and writer.writing
    assert not os.path.exists(f"{path}.{dead}.part")
    assert not os.path.exists(path)  # never promoted by anyone but its writer


def test_a_cut_off_archive_is_not_started_from(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    writer = plan(cache, java, spark)
    writer._finish(SimpleNamespace(proc=_stand_in_jvm(writer.part, 0)))
    with open(writer.path, "r+b") as handle:  # a JVM mapping this dies of SIGBUS
        handle.truncate(1024 * 1024 + 10)
    again = plan(cache, java, spark)
    assert again is not None and again.writing
    assert not os.path.exists(writer.path)


def test_an_archive_whose_jars_are_gone_is_removed_when_another_is_written(tmp_path):
    import shutil

    java, spark = _spark_home(tmp_path / "old")
    cache = str(tmp_path / "cache")
    old = plan(cache, java, spark)
    old._finish(SimpleNamespace(proc=_stand_in_jvm(old.part, 0)))
    java, other = _spark_home(tmp_path / "new")
    kept = plan(cache, java, other)
    kept._finish(SimpleNamespace(proc=_stand_in_jvm(kept.part, 0)))
    assert os.path.exists(old.path)  # its jars still exist: another virtualenv may use it
    shutil.rmtree(tmp_path / "old" / "spark")
    newer = plan(cache, java, other)
    os.remove(newer.path)  # written again: the orphans go then
    newer = plan(cache, java, other)
    newer._finish(SimpleNamespace(proc=_stand_in_jvm(newer.part, 0)))
    assert not os.path.exists(old.path) and not os.path.exists(old.path + ".json")
    assert is_archive(newer.path, size_kept=True)


def test_an_archive_of_jars_changed_in_place_is_removed_when_the_new_one_is_written(tmp_path):
    java, spark = _spark_home(tmp_path)
    cache = str(tmp_path / "cache")
    old = plan(cache, java, spark)
    old._finish(SimpleNamespace(proc=_stand_in_jvm(old.part, 0)))
    other_java = tmp_path / "java21"
    other_java.write_bytes(b"another java")
    beside = plan(cache, str(other_java), spark)  # the same jars with another Java: both stay
    beside._finish(SimpleNamespace(proc=_stand_in_jvm(beside.part, 0)))
    assert is_archive(old.path, size_kept=True) and is_archive(beside.path, size_kept=True)
    (tmp_path / "spark" / "jars" / "spark-core.jar").write_bytes(b"y" * 11)  # pyspark upgraded
    new = plan(cache, java, spark)
    assert new.writing and new.path != old.path
    new._finish(SimpleNamespace(proc=_stand_in_jvm(new.part, 0)))
    assert not os.path.exists(old.path) and not os.path.exists(old.path + ".json")
    assert is_archive(new.path, size_kept=True) and is_archive(beside.path, size_kept=True)


def test_another_java_or_other_jars_get_an_archive_of_their_own(tmp_path):
    java, spark = _spark_home(tmp_path)
    key = archive_key(java, spark)
    (tmp_path / "spark" / "jars" / "spark-core.jar").write_bytes(b"y" * 11)
    assert archive_key(java, spark) != key


def test_a_profile_that_manages_class_data_sharing_or_switches_it_off_is_left_alone():
    from dbt.adapters.hiveopt.connections import _class_archive

    assert _class_archive(SimpleNamespace(class_archive=False), "-Dx=1") is None
    assert _class_archive(SimpleNamespace(class_archive=True), "-XX:SharedArchiveFile=/mine.jsa") is None
    assert class_archive.own_archive_flags("-Xshare:off")
