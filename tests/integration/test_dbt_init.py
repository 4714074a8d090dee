"""`dbt init` offers a hiveopt profile: answer its prompts like a user and read the profile."""

import os
import subprocess
import sys

import pytest
import yaml

pytestmark = pytest.mark.integration


def test_dbt_init_writes_a_session_profile(tmp_path):
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    from dbt.version import _get_adapter_plugin_names

    # Answers: the adapter (by its number in dbt's own list), the connection method (1: session),
    # spark_dir, schema, threads.
    number = list(_get_adapter_plugin_names()).index("hiveopt") + 1
    env = {**os.environ, "DBT_PROFILES_DIR": str(tmp_path)}
    result = subprocess.run(
        [dbt, "init", "demo_project"],
        cwd=tmp_path,
        env=env,
        text=True,
        capture_output=True,
        input=f"{number}\n1\n.hiveopt-spark\nanalytics\n1\n",
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    profile = yaml.safe_load((tmp_path / "profiles.yml").read_text())["demo_project"]["outputs"]["dev"]
    assert profile == {
        "type": "hiveopt",
        "method": "session",
        "host": "localhost",
        "spark_dir": ".hiveopt-spark",
        "schema": "analytics",
        "threads": 1,
    }
