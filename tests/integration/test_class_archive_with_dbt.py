"""The embedded session's JVM writes its class archive in the first `dbt run` and starts from it in
the next; a `dbt debug` before them writes none (class_archive.py): real dbt in processes of their
own, the real JVM."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration
# dbt in processes of its own, three times (about 90 s): early, not last (conftest).
SEND_FIRST = True


def _project(tmp_path):
    files = {
        "dbt_project.yml": """
            name: archived
            version: "1.0"
            config-version: 2
            profile: archived
            """,
        "profiles.yml": """
            archived:
              target: dev
              outputs:
                dev:
                  type: hiveopt
                  method: session
                  schema: archived
                  threads: 2
            """,
        "models/a.sql": "{{ config(materialized='table') }}\nselect id, id % 7 as k from range(100)\n",
        "models/b.sql": "select k, count(*) as n from {{ ref('a') }} group by k\n",
    }
    for path, text in files.items():
        os.makedirs(os.path.dirname(tmp_path / path), exist_ok=True)
        (tmp_path / path).write_text(textwrap.dedent(text).lstrip())


def _dbt(tmp_path, command="run", **env):
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    done = subprocess.run(
        [dbt, command, "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    assert command != "run" or "PASS=2" in console, console
    return console


def test_the_first_run_writes_the_class_archive_and_the_next_starts_from_it(tmp_path):
    _project(tmp_path)
    cache = tmp_path / "cache"
    # A newcomer's first command: its JVM loads too few classes for the archive builds start from.
    debug = _dbt(tmp_path, "debug", HIVEOPT_CLASS_ARCHIVE_DIR=str(cache))
    assert "All checks passed" in debug, debug
    assert "kept in" not in debug and not os.path.exists(cache), debug

    first = _dbt(tmp_path, HIVEOPT_CLASS_ARCHIVE_DIR=str(cache))
    assert "hiveopt: the Spark JVM's classes are kept in" in first, first
    (archive,) = [name for name in os.listdir(cache) if name.endswith(".jsa")]
    assert sorted(os.listdir(cache)) == [archive, archive + ".json"]  # no lock, no part left
    assert "[warning][cds]" not in first  # HotSpot's lines on the classes it skips stay out

    loaded = tmp_path / "classes.log"
    second = _dbt(
        tmp_path,
        HIVEOPT_CLASS_ARCHIVE_DIR=str(cache),
        JAVA_TOOL_OPTIONS=f"-Xlog:class+load=info:file={loaded}",
    )
    assert "kept in" not in second  # nothing written again
    lines = loaded.read_text().splitlines()
    spark = [line for line in lines if " org.apache.spark.SparkContext " in line]
    assert spark and "source: shared objects file (top)" in spark[0], spark  # from the archive
    shared = sum("shared objects file (top)" in line for line in lines)
    assert shared > 5000, shared
