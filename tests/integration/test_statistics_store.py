"""The statistics store under dbt's threads and under faults, through real dbt runs.

- `threads: 8`, 16 models reading 4 sources for the first time, on the session, over Thrift and
  over Spark Connect to the test cluster: no error, no model unoptimized for it, one full gathering per table;
- a store row that does not parse costs that table's statistics only (gathered again), with one
  warning naming the table; a store that cannot be written keeps the run's statistics in memory;
- a fallback rewrites the model's record (the SQL that ran, and why);
- the NULL hot-key repro: `skewed_keys` listing `none` returns the rows the model as written returns.
"""

import datetime
import json
import os
import textwrap
from collections import Counter

import pytest
from helpers.dbt_run import Events, run_dbt

from dbt.adapters.hiveopt.model_inputs import (
    BEHIND_STATE,
    FIRST_PASS,
    FIRST_PASS_BEHIND,
    FIRST_PASS_STATE,
    FIRST_PASS_WAIT,
)
from dbt.adapters.hiveopt.statistics_service import StatisticsService

pytestmark = pytest.mark.integration

SOURCES = ("s1", "s2", "s3", "s4")
MODELS = 16


def _write(root, files):
    for path, text in files.items():
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())


def _profile(name, output):
    lines = "\n".join("      " + line for line in textwrap.dedent(output).strip().splitlines())
    return f"{name}:\n  target: dev\n  outputs:\n    dev:\n{lines}\n"


def threads_project(root, source_db, stats_schema, connection, optimizer=""):
    """16 models, each joining two of 4 sources on `k`, built by 8 threads at once; `optimizer`:
    more settings of the profile's optimizer block (one per line)."""
    creates = "".join(
        f'  - "create table if not exists {source_db}.{s} using parquet as select id, '
        f"cast(id % {100 + i} as int) as k, concat('v', cast(id % 7 as string)) as v from range({20000 + 1000 * i})\"\n"
        for i, s in enumerate(SOURCES)
    )
    project = (
        'name: threads\nversion: "1.0"\nconfig-version: 2\nprofile: threads\non-run-start:\n'
        f'  - "create database if not exists {source_db}"\n{creates}'
        "models:\n  threads:\n    +materialized: table\n"
    )
    files = {
        "dbt_project.yml": project,
        "models/sources.yml": f"""
            version: 2
            sources:
              - name: src
                schema: {source_db}
                tables: [{", ".join(f"{{name: {s}}}" for s in SOURCES)}]
            """,
    }
    for i in range(MODELS):
        a, b = SOURCES[i % 4], SOURCES[(i + 1 + i // 4) % 4]
        if a == b:
            b = SOURCES[(i + 2) % 4]
        files[f"models/m{i:02d}.sql"] = (
            f"select a.k, count(*) + {i} as n, max(b.v) as v from {{{{ source('src', '{a}') }}}} a "
            f"join {{{{ source('src', '{b}') }}}} b on a.k = b.k group by a.k\n"
        )
    files["profiles.yml"] = _profile(
        "threads",
        connection
        + f"""
        threads: 8
        optimizer:
          stats:
            schema: {stats_schema}
        """.rstrip(" ")
        + "".join(f"          {line}\n" for line in optimizer.splitlines()),
    )
    _write(root, files)


def session_project(spark, root, optimizer=""):
    """The threads project on the session, its databases dropped first."""
    for db in ("stt_src", "stt_stats", "stt"):
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
    connection = """
        type: hiveopt
        method: session
        schema: stt
        """
    threads_project(root, "stt_src", "stt_stats", connection, optimizer=optimizer)


def run(root, *args, events=None):
    return run_dbt([*args, "--project-dir", str(root), "--profiles-dir", str(root)], events)


def records(root):
    folder = root / "target" / "hiveopt"
    return {name[:-5]: json.loads((folder / name).read_text()) for name in os.listdir(folder) if name.endswith(".json")}


def check_threads_run(result, events, root, source_db):
    assert result.success, [(r.node.name, r.status, r.message) for r in result.result.results]
    models = [r for r in result.result.results if r.node.resource_type == "model"]
    assert Counter(str(r.status) for r in models) == Counter({"success": MODELS})
    hiveopt_warnings = [
        m
        for m in events.messages
        if "hiveopt" in m.lower()
        and any(w in m for w in ("not saved", "failed", "not gathered", "not optimized", "cannot"))
    ]
    assert hiveopt_warnings == []
    states = Counter()
    first_passes = []
    for name, record in records(root).items():
        assert record["fallback_reason"] is None, (name, record["fallback_reason"])
        gathering = dict(record["statistics_gathering"])
        if FIRST_PASS in gathering:
            first_passes.append(gathering.pop(FIRST_PASS))
        if FIRST_PASS_WAIT in gathering:  # it started while another model's thread ran the pass
            wait = gathering.pop(FIRST_PASS_WAIT)
            assert wait["tables"] == sorted(f"{source_db}.{s}" for s in SOURCES) and wait["waited_seconds"] > 0, wait
        assert len(gathering) == 2 and set(gathering) <= {f"{source_db}.{s}" for s in SOURCES}
        for table, entry in gathering.items():
            # The invocation's first pass gathered every source, with the columns the project's
            # models name: the model that ran it says so, the others find them current.
            assert entry["state"] in ("current", FIRST_PASS_STATE), (name, table, entry)
            states[(table, entry["state"])] += 1
        assert all(used["precision"] == "exact" for used in record["statistics_used"].values())
    # One pass over the four sources, whatever the threads: the other models waited and used it.
    assert [p["tables"] for p in first_passes] == [sorted(f"{source_db}.{s}" for s in SOURCES)], first_passes
    print(f"threads run: {MODELS} models, states {dict(states)}")


def test_threads_on_the_session(spark, tmp_path):
    spark.sql("DROP DATABASE IF EXISTS stt_src CASCADE")
    spark.sql("DROP DATABASE IF EXISTS stt_stats CASCADE")
    threads_project(
        tmp_path,
        "stt_src",
        "stt_stats",
        """
        type: hiveopt
        method: session
        schema: stt
        """,
    )
    events = Events()
    result = run(tmp_path, "run", events=events)
    check_threads_run(result, events, tmp_path, "stt_src")
    stored = spark.sql(
        "SELECT table_name, COUNT(*) AS n FROM stt_stats.table_statistics "
        "WHERE table_name NOT LIKE 'outcome:%' GROUP BY table_name"
    ).collect()
    assert {row.table_name: row.n for row in stored} == {f"stt_src.{s}": 1 for s in SOURCES}


def test_a_first_pass_behind_the_builds_keeps_them_from_waiting(spark, tmp_path):
    """`stats.first_pass: behind`, 16 models on 8 threads, the sources never gathered: the first
    model that needs statistics starts one pass over the four sources on a thread of its own and
    no model waits for it. The models that start while it runs read the sources without
    statistics and run as written (the record says why); the pass's seconds go into the starting
    model's record; its statistics are saved, and the next run rewrites every model from them,
    with the same rows."""
    # Spark broadcasts nothing by itself: with statistics every model gets a hint.
    session_project(spark, tmp_path, "spark_broadcast_threshold_bytes: -1\nfeedback: off\nstats:\n  first_pass: behind")
    sources = sorted(f"stt_src.{s}" for s in SOURCES)
    events = Events()
    result = run(tmp_path, "run", events=events)
    assert result.success, [(r.node.name, r.status, r.message) for r in result.result.results]
    assert not [m for m in events.messages if "hiveopt" in m.lower() and ("failed" in m or "not saved" in m)]
    first = records(tmp_path)
    assert len(first) == MODELS
    passes = [
        r["statistics_gathering"][FIRST_PASS_BEHIND]
        for r in first.values()
        if FIRST_PASS_BEHIND in r["statistics_gathering"]
    ]
    assert len(passes) == 1 and passes[0]["tables"] == sources and passes[0]["seconds"] > 0, passes
    as_written = 0
    for name, record in first.items():
        gathering = {k: v for k, v in record["statistics_gathering"].items() if k != FIRST_PASS_BEHIND}
        assert FIRST_PASS not in gathering and FIRST_PASS_WAIT not in gathering, (name, gathering)
        states = {entry["state"] for entry in gathering.values()}
        # No model gathered a table itself: the pass's tables were either being gathered or current.
        assert states <= {BEHIND_STATE, "current"}, (name, states)
        if BEHIND_STATE in states:
            as_written += 1
            assert not record["changed"] and record["fallback_reason"] is None, name
    # At least the model that started the pass ran as written (8 threads: usually all the first 8).
    assert as_written >= 1
    said = [m for m in events.messages if f"{MODELS} models: " in m]
    behind = f"{as_written} unchanged ({as_written} statistics being gathered behind the builds)"
    assert said and behind in said[0], said
    rows_before = sorted(spark.table("stt.m00").collect())

    result = run(tmp_path, "run")
    assert result.success
    second = records(tmp_path)
    for name, record in second.items():
        assert FIRST_PASS_BEHIND not in record["statistics_gathering"], name
        assert {e["state"] for e in record["statistics_gathering"].values()} == {"current"}, name
        assert record["changed"] and all(u["precision"] == "exact" for u in record["statistics_used"].values()), name
    assert sorted(spark.table("stt.m00").collect()) == rows_before
    print(f"first pass behind: {passes[0]['seconds']} s, {as_written} of {MODELS} models ran as written meanwhile")


def test_feedback_measures_each_rewrite_once_and_keeps_the_faster_on_threads(spark, tmp_path):
    """16 rewritten models built by 8 threads, four times: the first build gathers the sources'
    statistics and measures nothing (its time stands for a day that does not come back); then
    each runs optimized, then as written, then whichever built faster (the optimized SQL only
    when faster by the margin), every outcome saved (two per model, none lost to concurrent
    saves); an outcome where the original was faster keeps the original and the record says why."""
    from dbt.adapters.hiveopt.feedback import MARGIN, ORIGINAL_FASTER, NoGain, Outcome

    # Spark broadcasts nothing by itself here: every join gets its hint, so every model is rewritten.
    session_project(spark, tmp_path, "spark_broadcast_threshold_bytes: -1")
    ran = []
    for _ in range(4):
        assert run(tmp_path, "run").success
        ran.append({name: r["feedback"] for name, r in records(tmp_path).items() if r.get("feedback")})
    assert len(ran[0]) == MODELS, sorted(ran[0])
    assert all(f["ran"] == "optimized" and f["not_measured"] and "seconds" not in f for f in ran[0].values())
    assert {f["ran"] for f in ran[1].values()} == {"optimized"} and {f["ran"] for f in ran[2].values()} == {"original"}
    assert all(f["why"].startswith("exploring: the original this build") for f in ran[2].values())
    assert all(f["seconds"] > 0 for build in ran[1:] for f in build.values())
    rows = spark.sql("SELECT table_name, payload FROM stt_stats.table_statistics WHERE table_name LIKE 'outcome:%'")
    outcomes, memories = {}, {}
    for row in rows.collect():
        if row.table_name.endswith(":no-gain"):  # a kept original, remembered (below)
            memories[row.table_name.split(":")[1].split(".")[1]] = NoGain.from_payload(row.payload)
            continue
        outcome = Outcome.from_payload(row.payload)
        outcomes.setdefault(row.table_name, []).append(outcome)
    assert len(outcomes) == 2 * MODELS, sorted(outcomes)
    kept_original = {name for name, build in ran[3].items() if build["ran"] == "original"}
    assert set(memories) == kept_original and all(m.reason == ORIGINAL_FASTER for m in memories.values())
    for name, build in ran[3].items():  # judged on what builds 2 and 3 measured
        optimized, original = ran[1][name]["seconds"], ran[2][name]["seconds"]
        expected = "optimized" if optimized <= original * (1 - MARGIN) else "original"
        assert build["ran"] == expected and build["why"].startswith(f"kept {expected}:"), (name, build)
        # The fourth build ran the kept variant and was timed, but the memory still holds the
        # exploring builds' times: the decision does not flip on one noisy build.
        assert build["seconds"] > 0
        for variant, explored in (("optimized", optimized), ("original", original)):
            latest = max(outcomes[f"outcome:stt.{name}:{variant}"], key=lambda o: o.built_at)
            assert abs(latest.seconds - explored) < 0.01, (name, variant, latest, explored)
    # A model whose original measured faster keeps it, and says so.
    service = StatisticsService(lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema="stt_stats")
    rewrite, size = ran[3]["m00"]["rewrite"], ran[3]["m00"]["input_bytes"]
    now = datetime.datetime.now(datetime.timezone.utc)  # later than the runs': the latest save wins
    service.forget_outcomes(["stt.m00"])  # with what build 4 remembered, if it kept the original
    service.record_outcome("stt.m00", Outcome("optimized", rewrite, 7.9, size, now.isoformat()))
    service.record_outcome("stt.m00", Outcome("original", rewrite, 4.9, size, now.isoformat()))
    events = Events()
    assert run(tmp_path, "run", "--select", "m00", events=events).success
    record = records(tmp_path)["m00"]
    why = f"kept original: optimized 7.9 s vs original 4.9 s on {now.date().isoformat()}"
    assert record["feedback"]["why"] == why and record["feedback"]["ran"] == "original"
    assert (tmp_path / "target" / "hiveopt" / "m00.sql").read_text().strip() == record["original_sql"].strip()
    assert events.matching(f"m00: runs as written ({why})")
    (line,) = events.matching("models: ")
    assert "1 unchanged (1 feedback: the original was faster)" in line, line
    # Remembered: the next build of the same SQL on inputs of the same size runs as written at
    # once, with no catalog read of its inputs, no statistics and no optimizer.
    events = Events()
    assert run(tmp_path, "run", "--select", "m00", events=events).success
    record = records(tmp_path)["m00"]
    assert record["unchanged_reason"].startswith(f"feedback: the original was faster (remembered): {why}; "), record
    assert record["statistics_gathering"] == {} and not record["rules"] and "feedback" not in record
    (line,) = events.matching("models: ")
    assert "1 unchanged (1 feedback: the original was faster (remembered))" in line, line


@pytest.mark.thrift
def test_threads_on_a_thrift_server(thrift_server, tmp_path):
    threads_project(
        tmp_path,
        "stt_src",
        "stt_stats",
        f"""
        type: hiveopt
        method: thrift
        host: 127.0.0.1
        port: {thrift_server.port}
        user: dbt
        schema: stt
        """,
    )
    events = Events()
    result = run(tmp_path, "run", events=events)
    check_threads_run(result, events, tmp_path, "stt_src")
    from pyhive import hive

    with hive.connect(host="127.0.0.1", port=thrift_server.port, username="dbt") as connection:
        cursor = connection.cursor()
        cursor.execute(
            "SELECT table_name, COUNT(*) AS n FROM stt_stats.table_statistics "
            "WHERE table_name NOT LIKE 'outcome:%' GROUP BY table_name"
        )
        assert dict(cursor.fetchall()) == {f"stt_src.{s}": 1 for s in SOURCES}


@pytest.mark.connect
def test_threads_over_spark_connect(connect_server, tmp_path):
    """Eight threads, eight Spark Connect sessions on the server, one statistics store."""
    from dbt.adapters.hiveopt.spark_connect import open_session

    threads_project(
        tmp_path,
        "stc_src",
        "stc_stats",
        f"""
        type: hiveopt
        method: connect
        host: 127.0.0.1
        port: {connect_server.port}
        schema: stc
        """,
    )
    events = Events()
    result = run(tmp_path, "run", events=events)
    check_threads_run(result, events, tmp_path, "stc_src")
    session = open_session("127.0.0.1", connect_server.port, None, False, {})
    try:
        stored = session.sql(
            "SELECT table_name, COUNT(*) AS n FROM stc_stats.table_statistics "
            "WHERE table_name NOT LIKE 'outcome:%' GROUP BY table_name"
        )
        assert {row.table_name: row.n for row in stored.collect()} == {f"stc_src.{s}": 1 for s in SOURCES}
    finally:
        session.stop()


# -- faults and untrusted values, on the session -------------------------------------------------

FAULTS = {
    "dbt_project.yml": """
        name: faults
        version: "1.0"
        config-version: 2
        profile: faults
        models:
          faults:
            +materialized: table
        """,
    # 90% of the fact's rows on 'hot'; NULL keys too.
    "models/fact.sql": """
        select case when id % 10 < 9 then 'hot' when id % 10 = 9 and id % 20 = 9 then null
                    else concat('k', cast(id % 500 as string)) end as k, id as v
        from range(20000)
        """,
    "models/dim.sql": """
        select case when id = 0 then 'hot' else concat('k', cast(id as string)) end as k,
               concat('name-', cast(id as string)) as name
        from range(5000)
        """,
    "models/hot_left.sql": """
        {{ config(hiveopt={'skewed_keys': {target.schema ~ '.fact': {'k': [none, 'hot']}}}) }}
        select f.k, f.v, d.name from {{ ref('fact') }} f left join {{ ref('dim') }} d on f.k = d.k
        """,
    "models/joined.sql": """
        select f.k, count(*) as n from {{ ref('fact') }} f join {{ ref('dim') }} d on f.k = d.k group by f.k
        """,
}


@pytest.fixture()
def faults(spark, tmp_path):
    spark.sql("DROP DATABASE IF EXISTS stf CASCADE")
    spark.sql("DROP DATABASE IF EXISTS stf_stats CASCADE")
    _write(
        tmp_path,
        {
            **FAULTS,
            "profiles.yml": _profile(
                "faults",
                """
        type: hiveopt
        method: session
        schema: stf
        threads: 4
        optimizer:
          broadcast_threshold_bytes: 1000
          # Spark would broadcast these small tables itself, and the skew rule leaves a join
          # Spark broadcasts alone: say it broadcasts nothing, as a cluster with big tables does.
          spark_broadcast_threshold_bytes: -1
          task_slots: 2
          stats:
            schema: stf_stats
        """,
            ),
        },
    )
    return tmp_path


def test_null_hot_key_repro_returns_the_rows_as_written(faults, spark):
    events = Events()
    assert run(faults, "run", events=events).success
    record = records(faults)["hot_left"]
    assert "rewrite_skew_joins" in record["fired_rules"], record["rules"]
    assert "NOT f.k IN ('hot')" in record["optimized_sql"] and "NULL," not in record["optimized_sql"]
    assert events.matching("hot_left: hiveopt setting skewed_keys['stf.fact']['k']: NULL is never a hot key; ignored")
    built = spark.sql("SELECT k, v, name FROM stf.hot_left").collect()
    written = spark.sql(record["original_sql"]).collect()
    print(f"NULL hot-key repro: {len(built)} rows built, {len(written)} rows as written")
    assert Counter(map(tuple, built)) == Counter(map(tuple, written)) and len(written) == 20000


def test_an_unreadable_payload_costs_only_its_table(faults, spark):
    assert run(faults, "run", "--select", "fact", "dim").success
    assert run(faults, "run", "--select", "joined").success  # gathers fact and dim
    spark.sql(
        "INSERT OVERWRITE TABLE stf_stats.table_statistics PARTITION (save_id) "
        "SELECT 'stf.dim', 'x', '9999', 0.0, '{not json', 'broken'"
    )
    events = Events()
    assert run(faults, "run", "--select", "joined", events=events).success
    warnings = events.matching("statistics of stf.dim saved at 9999 are unreadable")
    assert len(warnings) == 1
    gathering = records(faults)["joined"]["statistics_gathering"]
    # The newest row of dim is skipped; its previous save is still valid and used.
    assert gathering["stf.fact"]["state"] == "current" and gathering["stf.dim"]["state"] == "current"
    assert not events.matching("optimizer failed") and records(faults)["joined"]["fallback_reason"] is None
    # With no valid row left, only dim is gathered again; fact keeps its statistics.
    spark.sql("ALTER TABLE stf_stats.table_statistics DROP PARTITION (save_id = 'broken')")
    spark.sql(
        "INSERT OVERWRITE TABLE stf_stats.table_statistics PARTITION (save_id) "
        "SELECT 'stf.dim', 'x', '9999', 0.0, '{\"row_count\": \"many\"}', 'broken'"
    )
    # A run saves all it gathered as one save: drop the saves holding dim's good rows, and write
    # back the other tables' rows they held.
    good = {
        r.save_id
        for r in spark.sql(
            "SELECT save_id FROM stf_stats.table_statistics WHERE table_name = 'stf.dim' AND save_id <> 'broken'"
        ).collect()
    }
    others = [
        r
        for r in spark.table("stf_stats.table_statistics").collect()
        if r.save_id in good and r.table_name != "stf.dim"
    ]
    for save_id in good:
        spark.sql(f"ALTER TABLE stf_stats.table_statistics DROP PARTITION (save_id = '{save_id}')")
    if others:
        spark.createDataFrame(others).createOrReplaceTempView("kept_rows")
        spark.sql(
            "INSERT INTO stf_stats.table_statistics PARTITION (save_id) "
            "SELECT table_name, fingerprint, saved_at, gather_seconds, payload, save_id FROM kept_rows"
        )
    events = Events()
    assert run(faults, "run", "--select", "joined", events=events).success
    assert len(events.matching("statistics of stf.dim saved at 9999 are unreadable (StatisticsError: row_count")) == 1
    gathering = records(faults)["joined"]["statistics_gathering"]
    assert gathering["stf.fact"]["state"] == "current" and gathering["stf.dim"]["state"] == FIRST_PASS_STATE
    assert gathering[FIRST_PASS]["tables"] == ["stf.dim"]


def test_a_store_that_cannot_be_written_keeps_the_statistics_of_the_run(faults, spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS stf_stats")
    spark.sql(
        "CREATE VIEW stf_stats.table_statistics AS SELECT 'x' AS table_name, 'x' AS fingerprint, "
        "'0' AS saved_at, 0.0 AS gather_seconds, '{}' AS payload, 'x' AS save_id WHERE 1 = 0"
    )
    events = Events()
    assert run(faults, "run", events=events).success
    assert len(events.matching("not saved to stf_stats.table_statistics")) == 1  # one warning per run
    by_model = records(faults)
    assert "select_join_algorithms" in by_model["joined"]["fired_rules"] or by_model["joined"]["changed"]
    assert all(v["precision"] == "exact" for v in by_model["joined"]["statistics_used"].values())


def test_a_fallback_rewrites_the_record(faults, monkeypatch):
    assert run(faults, "run").success
    folder = faults / "target" / "hiveopt"
    assert (folder / "joined.json").exists()
    from dbt.adapters.hiveopt.impl import HiveoptAdapter

    def broken(self, *args, **kwargs):
        raise RuntimeError("boom\n\tat org.apache.spark.Something(Something.java:1)")

    monkeypatch.setattr(HiveoptAdapter, "_optimize", broken)
    events = Events()
    assert run(faults, "run", "--select", "joined", events=events).success
    (warning,) = events.matching("joined: optimizer failed")
    assert "RuntimeError: boom" in warning and "Something.java" not in warning  # one line, no stack trace
    record = json.loads((folder / "joined.json").read_text())
    assert record["changed"] is False and record["fallback_reason"].startswith("optimizer failed (RuntimeError: boom")
    assert (folder / "joined.sql").read_text().strip() == record["original_sql"].strip()
    assert "BROADCAST" not in (folder / "joined.sql").read_text()
