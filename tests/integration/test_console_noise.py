"""Spark's and the JVM's known noise stays out of dbt's console, real warnings do not: `dbt build`
as a user runs it (a process of its own, the embedded session, 4 threads)."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration
# One test of dbt runs in processes of their own (40 s): early, not last (conftest).
SEND_FIRST = True

NOISE = (
    "Using an existing Spark session",
    "HiveConf of name",
    "NativeCodeLoader",
    "SPARK_LOCAL_IP",
    "resolves to a loopback address",
    "SparkUI",
    "METASTORE_FILTER_HOOK",
    "was created concurrently",
    "Using Spark's default log4j profile",
)


def test_known_noise_is_kept_out_and_real_warnings_show(tmp_path):
    files = {
        "dbt_project.yml": """
            name: quiet
            version: "1.0"
            config-version: 2
            profile: quiet
            models:
              quiet:
                +materialized: view
            """,
        "profiles.yml": """
            quiet:
              target: dev
              outputs:
                dev:
                  type: hiveopt
                  method: session
                  schema: quiet
                  threads: 4
            """,
        "models/a.sql": "select id, id % 7 as k from range(100)\n",
        "models/b.sql": "select id as k, concat('n', cast(id as string)) as name from range(7)\n",
        # A window over the whole input: Spark's WindowExec warns, and rightly.
        "models/ranked.sql": """
            {{ config(materialized='table') }}
            select a.id, b.name, row_number() over (order by a.id) as position
            from {{ ref('a') }} a join {{ ref('b') }} b on a.k = b.k
            """,
    }
    for path, text in files.items():
        os.makedirs(os.path.dirname(tmp_path / path), exist_ok=True)
        (tmp_path / path).write_text(textwrap.dedent(text).lstrip())
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    done = subprocess.run(
        [dbt, "build", "--project-dir", str(tmp_path), "--profiles-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    console = done.stdout + done.stderr
    assert done.returncode == 0, console
    assert "PASS=3" in console, console
    noisy = [line for line in console.splitlines() if any(n in line for n in NOISE)]
    assert not noisy, noisy
    assert "WindowExec: No Partition Defined" in console
