"""The connection methods on the test cluster's SQL server (tests/conftest.py: spark_cluster):

- `dbt debug` checks a Spark Connect profile, and names a server that does not answer in a few
  seconds, without a gRPC dump; a model's SQL error reaches the user as the server's message;
- seeds with quotes, backslashes and empty cells load as written over Connect (bound parameters);
- a bounded statement is cancelled on Spark at its deadline over Thrift and over Connect, and the
  connection serves the next statement;
- partition pruning with values fetched over Connect: the rule fires with an IN-list, the model's
  rows equal the SQL as written (verify mode, itself bounded), and a verify past its deadline
  leaves the model unverified with a warning;
- over Thrift, the server's task slots (a Spark job) are asked once, by the model whose skew split
  weighs a hot key, and by no other model; a seed a model reads keeps its size while it loads (its
  statistics need no ANALYZE), a seed no model reads is loaded as dbt-spark loads it.
"""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from helpers.dbt_run import Events, run_dbt

from dbt.adapters.hiveopt.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.connect]

# Minutes of work that stops as soon as it is cancelled: a range checks for a kill between batches
# (a cross join's tasks ran on for 5-25 s after their job was cancelled, holding the cores).
SLOW = "SELECT SUM(id % 7) AS n FROM range(0, 1000000000000)"


def _write(root, files):
    for path, text in files.items():
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())


def _project(root, output, files=()):
    """A dbt project named `conn` whose one profile output is `output` (YAML lines)."""
    lines = "\n".join("      " + line for line in textwrap.dedent(output).strip().splitlines())
    _write(
        root,
        {
            "dbt_project.yml": 'name: conn\nversion: "1.0"\nconfig-version: 2\nprofile: conn\n'
            "models:\n  conn:\n    +materialized: table\n",
            "profiles.yml": f"conn:\n  target: dev\n  outputs:\n    dev:\n{lines}\n",
            **dict(files),
        },
    )


def _dbt(root, *args, events=None):
    return run_dbt([*args, "--project-dir", str(root), "--profiles-dir", str(root)], events)


def _dbt_process(root, *args, timeout=180):
    """dbt in a process of its own: what a user's terminal shows."""
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    command = [dbt, "--no-use-colors", *args, "--project-dir", str(root), "--profiles-dir", str(root)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def test_dbt_debug_checks_a_connect_profile(connect_server, tmp_path):
    _project(tmp_path, f"type: hiveopt\nmethod: connect\nhost: 127.0.0.1\nport: {connect_server.port}\nschema: conn")
    result = _dbt_process(tmp_path, "debug")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "method: connect" in result.stdout and "Connection test: [OK connection ok]" in result.stdout


def test_a_server_that_does_not_answer_is_named_without_a_grpc_dump(tmp_path):
    port = free_port()  # nothing listens there
    _project(tmp_path, f"type: hiveopt\nmethod: connect\nhost: 127.0.0.1\nport: {port}\nschema: conn")
    started = time.perf_counter()
    result = _dbt_process(tmp_path, "debug")
    seconds = time.perf_counter() - started
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"Spark Connect server at 127.0.0.1:{port}:" in output, output
    assert "UNAVAILABLE" in output and "debug_error_string" not in output and "_MultiThreadedRendezvous" not in output
    assert seconds < 60, seconds  # the client's own retries would wait ten minutes


def test_a_model_error_is_the_servers_message(connect_server, tmp_path):
    _project(
        tmp_path,
        f"type: hiveopt\nmethod: connect\nhost: 127.0.0.1\nport: {connect_server.port}\nschema: conn_err",
        {"models/broken.sql": "select * from conn_err.no_such_table"},
    )
    result = _dbt(tmp_path, "run")
    (node,) = result.result.results
    assert str(node.status) == "error"
    assert "TABLE_OR_VIEW_NOT_FOUND" in node.message and "no_such_table" in node.message, node.message
    assert "JVM stacktrace" not in node.message and "grpc" not in node.message.lower(), node.message


def test_seed_values_are_bound_not_spliced_over_connect(connect_server, tmp_path):
    from dbt.adapters.hiveopt.spark_connect import open_session

    _project(
        tmp_path,
        f"type: hiveopt\nmethod: connect\nhost: 127.0.0.1\nport: {connect_server.port}\nschema: conn_seed",
        {"seeds/odd.csv": 'id,text\n1,it\'s\n2,back\\slash\n3,\n4,"a, b"\n5,%s\n'},
    )
    result = _dbt(tmp_path, "seed")
    assert result.success, [(r.node.name, r.message) for r in result.result.results]
    session = open_session("127.0.0.1", connect_server.port, None, False, {})
    try:
        rows = sorted(tuple(r) for r in session.sql("SELECT id, text FROM conn_seed.odd").collect())
    finally:
        session.stop()
    assert rows == [(1, "it's"), (2, "back\\slash"), (3, None), (4, "a, b"), (5, "%s")]


def _cancelled_in_server_log(spark_cluster, before):
    """Lines the SQL server logged about cancelled or interrupted work since `before` (a size)."""
    log = next(d for d in spark_cluster.daemons if d.name == "sql-server").log
    with open(log, errors="replace") as handle:
        handle.seek(before)
        return [line for line in handle.read().splitlines() if "cancel" in line.lower() or "interrupt" in line.lower()]


def _log_size(spark_cluster):
    return os.path.getsize(next(d for d in spark_cluster.daemons if d.name == "sql-server").log)


def _open(method, port):
    """A connection as dbt opens it for a `method` profile (HiveoptConnectionManager.open)."""
    from dbt.adapters.contracts.connection import Connection

    from dbt.adapters.hiveopt.connections import HiveoptConnectionManager, HiveoptCredentials

    profile = {"method": method, "host": "127.0.0.1", "port": port, "schema": "conn_bounded", "user": "dbt"}
    credentials = HiveoptCredentials.from_dict(profile)
    return HiveoptConnectionManager.open(Connection(type="hiveopt", name="bounded", credentials=credentials))


@pytest.mark.thrift
@pytest.mark.parametrize("method", ["thrift", "connect"])
def test_a_bounded_statement_is_cancelled_at_its_deadline(spark_cluster, method):
    """The adapter's bounded run on a connection dbt opened: cancelled on Spark at a 2 s deadline
    (the server's log says so), and the connection serves the next statement."""
    port = spark_cluster.spec.thrift_port if method == "thrift" else spark_cluster.spec.connect_port
    before = _log_size(spark_cluster)
    connection = _open(method, port)
    try:
        started = time.perf_counter()
        with pytest.raises(TimeoutError):
            connection.handle.run_bounded(SLOW, started + 2.0)
        seconds = time.perf_counter() - started
        assert connection.handle.run_bounded("SELECT 41 + 1", time.perf_counter() + 60) == [(42,)]
    finally:
        connection.handle.close()
    print(f"{method}: cancelled {seconds:.1f} s after the start (deadline 2 s)")
    assert seconds < 6, seconds
    assert _cancelled_in_server_log(spark_cluster, before)


PRUNING = {
    # A fact aggregated by the key before the join: the aggregate reads only the keys the small
    # side holds once the fetched values are injected (Spark's DPP does not reach below it).
    "models/facts.sql": "select cast(id % 200 as int) as k, id as v from range(0, 400000)",
    "models/dims.sql": """
        select cast(id as int) as k, case when id % 20 = 0 then 'gold' else 'plain' end as tier
        from range(0, 200)
        """,
    "models/gold_totals.sql": """
        with per_key as (select k, sum(v) as total, count(*) as n from {{ ref('facts') }} group by k)
        select p.k, p.total, p.n from per_key p join {{ ref('dims') }} d on p.k = d.k where d.tier = 'gold'
        """,
    "models/gold_totals_quick_verify.sql": """
        {{ config(hiveopt={'verify_timeout_seconds': 0.001}) }}
        with per_key as (select k, sum(v) as total, count(*) as n from {{ ref('facts') }} group by k)
        select p.k, p.total, p.n from per_key p join {{ ref('dims') }} d on p.k = d.k where d.tier = 'gold'
        """,
}


def test_pruning_with_values_fetched_over_connect(connect_server, tmp_path):
    from dbt.adapters.hiveopt.spark_connect import open_session

    _project(
        tmp_path,
        f"""
        type: hiveopt
        method: connect
        host: 127.0.0.1
        port: {connect_server.port}
        schema: conn_prune
        threads: 2
        optimizer:
          verify: true
          prune_min_big_bytes: 0
        """,
        PRUNING,
    )
    events = Events()
    result = _dbt(tmp_path, "run", events=events)
    assert result.success, [(r.node.name, r.message) for r in result.result.results]
    with open(tmp_path / "target" / "hiveopt" / "gold_totals.json") as handle:
        record = json.load(handle)
    (rule,) = [r for r in record["rules"] if r["rule"] == "prune_partitions_from_small_side"]
    (fired,) = [d for d in rule["decisions"] if d["fired"]]
    print("pruning decision (connect):", json.dumps(fired, indent=1))
    assert "k IN (0, 20, 40" in fired["predicate"] and fired["fetch_seconds"] > 0, fired
    assert "IN (0, 20, 40" in (tmp_path / "target" / "hiveopt" / "gold_totals.sql").read_text()
    # No hot key in its joins: the cluster was not asked for its task slots (a Spark job).
    assert record["task_slots"]["value"] is None, record["task_slots"]
    # verify ran over Connect (a difference would have failed the model); past its deadline the
    # other model builds unverified, with a warning.
    (warning,) = events.matching("gold_totals_quick_verify: hiveopt verify: not compared")
    assert "verify_timeout_seconds is 0.001" in warning
    assert not events.matching("gold_totals: hiveopt verify: not compared")
    session = open_session("127.0.0.1", connect_server.port, None, False, {})
    try:
        built = sorted(tuple(r) for r in session.sql("SELECT k, total, n FROM conn_prune.gold_totals").collect())
        written = sorted(tuple(r) for r in session.sql(record["original_sql"]).collect())
    finally:
        session.stop()
    assert built == written and len(built) == 10


SKEWED = {
    # 90% of the fact's rows on 'hot': the skew split weighs that share against the task slots.
    "models/fact.sql": """
        select case when id % 10 < 9 then 'hot' else concat('k', cast(id % 500 as string)) end as k, id as v
        from range(20000)
        """,
    "models/dim.sql": """
        select case when id = 0 then 'hot' else concat('k', cast(id as string)) end as k,
               concat('name-', cast(id as string)) as name
        from range(5000)
        """,
    "models/per_key.sql": """
        select f.k, count(*) as n from {{ ref('fact') }} f join {{ ref('dim') }} d on f.k = d.k group by f.k
        """,
    # A join with no hot key (nothing needs the slots), of a model with a seed.
    "seeds/labels.csv": "k,label\nhot,the hot one\nk1,first\nk2,second\n",
    # A seed no model reads: no statistics, so nothing to keep while it loads.
    "seeds/unread.csv": "k,note\na,b\n",
    "models/names.sql": """
        select d.k, d.name, l.label from {{ ref('dim') }} d join {{ ref('labels') }} l on d.k = l.k
        """,
}


@pytest.mark.thrift
def test_task_slots_and_seed_sizes_cost_no_statement_a_model_does_not_need_over_thrift(thrift_server, tmp_path):
    """The server's task slots cost a Spark job (0.4-1.3 s on this cluster): asked once, by the
    model whose skew split weighs a hot key's share, and never for the model without one. A
    seed's connection keeps the table's size while it loads, so its statistics need no ANALYZE
    (three statements a seed, in the first model that read it); a seed no model reads gets none."""
    from pyhive import hive

    from dbt.adapters.hiveopt.impl import SERVER_SLOTS, SLOTS_NOT_ASKED

    _project(
        tmp_path,
        f"""
        type: hiveopt
        method: thrift
        host: 127.0.0.1
        port: {thrift_server.port}
        user: dbt
        schema: conn_skew
        threads: 2
        optimizer:
          # Tables this small: say nothing is broadcast, as on a cluster with big tables.
          broadcast_threshold_bytes: 1000
          spark_broadcast_threshold_bytes: -1
          stats:
            schema: conn_skew_stats
        """,
        SKEWED,
    )
    events = Events()
    result = _dbt(tmp_path, "build", events=events)
    assert result.success, [(r.node.name, r.message) for r in result.result.results]
    records = {}
    for name in ("per_key", "names"):
        with open(tmp_path / "target" / "hiveopt" / f"{name}.json") as handle:
            records[name] = json.load(handle)
    (weighed,) = [d for r in records["per_key"]["rules"] if r["rule"] == "rewrite_skew_joins" for d in r["decisions"]]
    print("skew decision (thrift):", json.dumps(weighed), records["per_key"]["task_slots"])
    assert records["per_key"]["task_slots"] == {"value": 2, "from": SERVER_SLOTS}
    assert weighed.get("task_slots") == 2 or "with 2 task slots" in weighed["reason"], weighed
    # names weighs no hot key: it never asks and records so, built before or after per_key asked
    # (threads 2 build them in either order).
    assert records["names"]["task_slots"] == {"value": None, "from": SLOTS_NOT_ASKED}, records["names"]["task_slots"]
    asked = [m for m in events.matching("spark_partition_id()") if "I/O" in m]
    assert len(asked) == 1, asked
    assert records["names"]["statistics_gathering"]["conn_skew.labels"]["state"] == "current"
    assert events.matching("I/O") and not events.matching("ANALYZE TABLE conn_skew.labels"), events.matching("I/O")
    kept = [m for m in events.matching("spark.sql.statistics.size.autoUpdate.enabled") if "I/O" in m]
    assert len(kept) == 2 and "s: SET " in kept[0] and "s: RESET " in kept[1], kept  # labels', not unread's
    with hive.connect(host=thrift_server.host, port=thrift_server.port, username="dbt") as connection:
        cursor = connection.cursor()
        cursor.execute("SELECT k, n FROM conn_skew.per_key")
        built = sorted(cursor.fetchall())
        cursor.execute(records["per_key"]["original_sql"])
        written = sorted(cursor.fetchall())
    assert built == written and ("hot", 18000) in built
