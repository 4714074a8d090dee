"""`dbt init` offers a hiveopt profile: answer its prompts like a user and read the profile."""

import os
import subprocess
import sys

import pytest
import yaml

from dbt.adapters.hiveopt.optimizer.pipeline import RULES

pytestmark = pytest.mark.integration


def test_dbt_init_writes_a_session_profile_and_the_project_runs_with_a_clean_git_status(tmp_path):
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
        input=f"{number}\n1\n.hiveopt-spark\nanalytics\n\n",
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
        "threads": 4,
        # Written as settings at their defaults (dbt init keeps no comments): where they go.
        "optimizer": {"enabled": True, "verify": False, "rules": {rule.name: True for rule in RULES}},
    }

    # The starter project builds on the embedded session, and its warehouse and metastore stay out
    # of git: the session's folder ignores itself. A JVM flag of the profile's own reaches the
    # session (the probe model fails without it) beside the session's (derby.log stays in its folder).
    profiles = yaml.safe_load((tmp_path / "profiles.yml").read_text())
    profiles["demo_project"]["outputs"]["dev"]["server_side_parameters"] = {
        "spark.driver.extraJavaOptions": "-Dhiveopt.probe=on"
    }
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump(profiles))
    project = tmp_path / "demo_project"
    (project / "models" / "jvm_flag_probe.sql").write_text(
        "select assert_true(java_method('java.lang.System', 'getProperty', 'hiveopt.probe') = 'on') as ok\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    run = subprocess.run([dbt, "run"], cwd=project, env=env, text=True, capture_output=True, timeout=300)
    assert run.returncode == 0 and "PASS=3" in run.stdout, run.stdout + run.stderr
    assert (project / ".hiveopt-spark" / "metastore_db").is_dir()
    assert (project / ".hiveopt-spark" / "derby.log").is_file()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, text=True, capture_output=True, check=True)
    assert ".hiveopt-spark" not in status.stdout and "derby.log" not in status.stdout, status.stdout
    assert "models/" in status.stdout  # the project's own files are untracked, as after any dbt init


@pytest.mark.connect
def test_dbt_init_offers_spark_connect_and_dbt_debug_checks_it(tmp_path, connect_server):
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    from dbt.version import _get_adapter_plugin_names

    # Answers: the adapter, the connection method (3: connect), host, port, schema, threads.
    number = list(_get_adapter_plugin_names()).index("hiveopt") + 1
    env = {**os.environ, "DBT_PROFILES_DIR": str(tmp_path)}
    result = subprocess.run(
        [dbt, "init", "connect_project"],
        cwd=tmp_path,
        env=env,
        text=True,
        capture_output=True,
        input=f"{number}\n3\n127.0.0.1\n{connect_server.port}\nanalytics\n\n",
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[3] connect" in result.stdout, result.stdout
    profile = yaml.safe_load((tmp_path / "profiles.yml").read_text())["connect_project"]["outputs"]["dev"]
    assert {key: profile[key] for key in ("type", "method", "host", "port", "schema")} == {
        "type": "hiveopt",
        "method": "connect",
        "host": "127.0.0.1",
        "port": connect_server.port,
        "schema": "analytics",
    }
    debug = subprocess.run(
        [dbt, "debug"], cwd=tmp_path / "connect_project", env=env, text=True, capture_output=True, timeout=180
    )
    assert debug.returncode == 0 and "OK connection ok" in debug.stdout, debug.stdout + debug.stderr
