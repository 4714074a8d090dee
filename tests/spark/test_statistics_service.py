"""The statistics service on real Spark tables: what one pass gathers, where it is stored,
freshness, and precision (absent is never zero)."""

import time

import pytest

from dbt.adapters.hiveopt.optimizer.statistics import Precision
from dbt.adapters.hiveopt.statistics_service import StatisticsService

pytestmark = pytest.mark.spark


def service(spark, schema="hiveopt_test_stats"):
    return StatisticsService(lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema=schema)


def recording(spark):
    """An `execute` for StatisticsService that runs on Spark and keeps every statement, in order."""
    statements = []

    def execute(sql):
        statements.append(sql)
        return [tuple(r) for r in spark.sql(sql).collect()]

    return statements, execute


def load_seedlike(spark, name, rows):
    """A table loaded as dbt loads a seed: dropped, created, then INSERT ... VALUES."""
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, g BIGINT) USING parquet")
    spark.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, {g})" for i, g in rows))


@pytest.fixture(scope="module")
def stats_table(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP TABLE IF EXISTS st.events")
    spark.sql("""
        CREATE TABLE st.events USING parquet AS
        SELECT id, CASE WHEN id % 10 < 9 THEN 7 ELSE id % 97 END AS hot_key,
               IF(id % 5 = 0, NULL, concat('name-', CAST(id % 50 AS STRING))) AS name,
               date_add(DATE '2024-01-01', CAST(id % 366 AS INT)) AS day
        FROM range(20000)
    """)
    return "st.events"


def test_one_pass_gathers_counts_ndv_nulls_ranges_and_key_detail(spark, stats_table):
    result = service(spark).gather(stats_table, key_columns=["hot_key", "day"])
    stats = result.stats
    assert stats.row_count.value == 20000 and stats.row_count.precision == Precision.EXACT
    assert stats.size_bytes.value > 0
    name = stats.column("name")
    assert name.null_count.value == 4000 and name.null_count.precision == Precision.EXACT
    assert name.ndv.value == pytest.approx(40, rel=0.1) and name.ndv.precision == Precision.ESTIMATED
    assert 6 <= name.avg_width.value <= 7
    day = stats.column("day")
    assert (day.min, day.max) == ("2024-01-01", "2024-12-31")
    assert len(day.histogram) == 33
    hot = stats.column("hot_key")
    assert hot.heavy_hitters[0][0] == 7 and hot.heavy_hitters[0][1] >= 18000
    assert stats.column("name").heavy_hitters is None  # a string no model joins on: no detail
    assert stats.column("id").heavy_hitters is not None  # integers are detailed on every full pass


def _wide_table(spark, table, names):
    """A 5,000-row table of an id, a 5-value segment, a long comment nobody reads and a name
    (`names`: its expression over id); an execute function for the service that records each
    statement, and the list it records into."""
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"""CREATE TABLE {table} USING parquet AS
                  SELECT id, concat('seg-', CAST(id % 5 AS STRING)) AS segment,
                         repeat('x', 200) AS comment, concat('n', CAST({names} AS STRING)) AS name
                  FROM range(5000)""")
    statements, execute = recording(spark)

    return execute, statements


def test_a_pass_reads_the_columns_models_use_and_a_later_model_pays_only_for_what_it_adds(spark):
    """A first read gathers the numbers and dates and the text columns the model uses, not every
    column (a long comment column nobody reads cost lineitem most of its pass); a later model that
    reads another column pays a pass over that column alone, merged into the same statistics."""
    execute, statements = _wide_table(spark, "st.wide", names="id")

    s = StatisticsService(execute, stats_schema="hiveopt_test_narrow")
    stats, state, _ = s.ensure("st.wide", ["segment"], columns={"segment", "id"})
    assert state == "gathered" and set(stats.columns) == {"id", "segment"}
    assert stats.column("segment").heavy_hitters is not None and stats.column("segment").ndv.value == 5
    (first_pass,) = [q for q in statements if "HLL_SKETCH_AGG" in q.upper()]
    assert "`comment`" not in first_pass and "`name`" not in first_pass
    # the same columns again: nothing to do
    assert s.ensure("st.wide", ["segment"], columns={"segment"})[1] == "current"
    # a model that also reads `name`: one pass over `name` alone, merged
    statements.clear()
    stats, state, _ = s.ensure("st.wide", [], columns={"segment", "name"})
    assert state == "gathered name (a narrow pass)" and set(stats.columns) == {"id", "segment", "name"}
    (second_pass,) = [q for q in statements if "HLL_SKETCH_AGG" in q.upper()]
    assert "`name`" in second_pass and "`segment`" not in second_pass and "`comment`" not in second_pass
    assert stats.row_count.value == 5000 and s.full_passes["st.wide"] == 1
    # stored merged: another run reads both columns back
    s.flush()
    again = StatisticsService(execute, stats_schema="hiveopt_test_narrow")
    assert set(again.current("st.wide")[0].columns) == {"id", "segment", "name"}


def test_a_first_pass_reads_the_columns_the_projects_models_name(spark):
    """With dbt's graph read (project_words), the first model's pass also reads and details the
    columns the project's other models name, so the model that joins or filters on them later
    finds them gathered: no narrow pass of its own. A column no model names stays unread."""
    execute, statements = _wide_table(spark, "st.named", names="id % 40")

    s = StatisticsService(execute, stats_schema="hiveopt_test_named")
    s.project_words = {"st.named": {"select", "id", "segment", "name", "from", "where"}}
    stats, state, _ = s.ensure("st.named", ["segment"], columns={"segment", "id"})
    assert state == "gathered" and set(stats.columns) == {"id", "segment", "name"}
    (first_pass,) = [q for q in statements if "HLL_SKETCH_AGG" in q.upper()]
    assert "`comment`" not in first_pass
    assert stats.column("name").heavy_hitters is not None
    assert stats.column("name").ndv.value == pytest.approx(40, rel=0.1)
    statements.clear()
    stats, state, _ = s.ensure("st.named", ["name"], columns={"name", "id"})
    assert state == "current" and not [q for q in statements if "HLL_SKETCH_AGG" in q.upper()]


def test_a_first_pass_details_only_the_columns_the_projects_models_use_as_keys(spark):
    """With the project's keys known (key_columns.key_words_downstream), a column the models name
    but never join or filter on is read (its NDV, nulls) without heavy hitters or a histogram,
    and a key no model compares by range gets no histogram: the detail is the costly part of a
    pass."""
    execute, statements = _wide_table(spark, "st.keyed", names="id % 40")

    s = StatisticsService(execute, stats_schema="hiveopt_test_keyed")
    s.project_words = {"st.keyed": {"select", "id", "segment", "name", "from", "where"}}
    s.project_keys = {"st.keyed": {"segment", "id"}}
    s.project_ranges = {}  # id is joined on, never compared by range: no histogram
    stats, state, _ = s.ensure("st.keyed", [], columns={"id"})
    assert state == "gathered" and set(stats.columns) == {"id", "segment", "name"}
    (first_pass,) = [q for q in statements if "HLL_SKETCH_AGG" in q.upper()]
    assert "APPROX_TOP_K(`segment`" in first_pass and "APPROX_TOP_K(`name`" not in first_pass
    assert "APPROX_PERCENTILE" not in first_pass
    assert stats.column("segment").heavy_hitters is not None and stats.column("id").heavy_hitters is not None
    assert stats.column("name").heavy_hitters is None and stats.column("id").histogram is None
    assert stats.column("name").ndv.value == pytest.approx(40, rel=0.1)


def test_statistics_are_shared_through_the_warehouse(spark, stats_table):
    service(spark).gather(stats_table)
    fresh = service(spark)  # another machine / run: nothing in memory
    stats, state = fresh.current(stats_table)
    assert state == "current" and stats.row_count.value == 20000


def test_a_changed_table_is_stale_and_gathered_again(spark, stats_table):
    spark.sql("CREATE TABLE IF NOT EXISTS st.growing USING parquet AS SELECT id FROM range(100)")
    first = service(spark)
    first.gather("st.growing")
    spark.sql("INSERT INTO st.growing SELECT id FROM range(100, 250)")
    later = service(spark)
    stats, state = later.current("st.growing")
    assert stats is None and state.startswith("stale")
    stats, state, seconds = later.ensure("st.growing")
    assert state == "gathered" and stats.row_count.value == 250 and seconds > 0


def test_a_table_that_changed_little_keeps_its_statistics_scaled(spark):
    """stats.keep_within_size (default 1.1): a daily load of a few percent keeps the statistics,
    scaled and marked estimated, with no pass; past the factor, or switched off, they are stale."""
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP TABLE IF EXISTS st.daily")
    spark.sql(
        "CREATE TABLE st.daily USING parquet AS "
        "SELECT id, date_add(DATE '2024-01-01', CAST(id % 300 AS INT)) AS day, concat('n', id % 7) AS name "
        "FROM range(20000)"
    )
    service(spark).gather("st.daily")
    # Today's load: 2% more rows, all of them past the old maximum date.
    spark.sql("INSERT INTO st.daily SELECT id, DATE '2024-10-27', 'n1' FROM range(20000, 20400)")

    def keeping(factor):
        execute = lambda sql: [tuple(r) for r in spark.sql(sql).collect()]  # noqa: E731
        return StatisticsService(execute, stats_schema="hiveopt_test_stats", keep_within_size=factor)

    kept = keeping(1.1)
    stats, state, seconds = kept.ensure("st.daily", columns=["id", "day"])
    assert state.startswith("kept: stale") and "within stats.keep_within_size 1.1" in state, state
    assert seconds == 0.0 and kept.passes == 0
    assert stats.row_count.precision == Precision.ESTIMATED and 20000 < stats.row_count.value < 22000
    assert stats.column("day").max > "2024-10-27"  # the new day is within the range estimated
    assert stats.column("id").ndv.value > 19000
    assert keeping(1.1).current("st.daily")[0].row_count.value == stats.row_count.value  # nothing saved
    # Asked for detail the kept statistics lack (a string key's heavy hitters): a whole pass.
    stats, state, seconds = kept.ensure("st.daily", key_columns=["name"], columns=["id", "name"])
    assert state == "gathered" and stats.row_count.value == 20400 and seconds > 0
    assert kept.current("st.daily")[1] == "current"
    # Switched off: stale. Past the factor: stale.
    spark.sql("INSERT INTO st.daily SELECT id, DATE '2024-10-26', 'n2' FROM range(20400, 20500)")
    assert service(spark).current("st.daily")[1].startswith("kept")  # the default
    assert keeping(1.0).current("st.daily")[1].startswith("stale")
    spark.sql("INSERT INTO st.daily SELECT id, DATE '2024-10-28', 'n2' FROM range(20500, 40000)")
    assert keeping(1.1).current("st.daily")[1].startswith("stale")


def test_never_analyzed_table_has_absent_not_zero_rows(spark):
    spark.sql("CREATE TABLE IF NOT EXISTS st.untouched (a INT) USING parquet")
    spark.sql("INSERT INTO st.untouched VALUES (1), (2)")
    s = service(spark, schema="hiveopt_test_empty_store")
    stats, state = s.current("st.untouched")
    assert stats is None and state == "never gathered"
    stats, state, _ = s.ensure("st.untouched", auto_gather=False)
    assert stats is None and "automatic gathering is off" in state


def test_a_big_table_is_read_from_a_sample_and_scaled_up(spark):
    """Past `sample_above_rows`, one exact COUNT(*) and a pass over a Bernoulli sample: the row count
    stays exact, NDVs of unique columns, null counts and heavy hitters are scaled, all estimated."""
    spark.sql("DROP TABLE IF EXISTS st.big")
    spark.sql("""CREATE TABLE st.big USING parquet AS
                 SELECT id, IF(id % 10 < 8, 1, id % 100) AS k, IF(id % 4 = 0, NULL, id % 1000) AS m
                 FROM range(400000)""")
    statements, execute = recording(spark)

    s = StatisticsService(
        execute,
        stats_schema="hiveopt_test_sampled",
        sample_above_rows=100000,
        sample_rows=40000,
        sample_check_above_bytes=0,
    )
    stats = s.gather("st.big", key_columns=["k"]).stats
    assert [q for q in statements if "TABLESAMPLE (10.0 PERCENT)" in q]
    assert stats.row_count.value == 400000 and stats.row_count.precision == Precision.EXACT
    assert stats.column("id").ndv.value == pytest.approx(400000, rel=0.15)
    assert stats.column("k").ndv.value == pytest.approx(21, rel=0.15)  # 1, and 80..99 seen in any 10%
    assert stats.column("m").null_count.value == pytest.approx(100000, rel=0.1)
    assert stats.column("m").ndv.value == pytest.approx(750, rel=0.15)  # not unique: as the sample saw it
    hot_value, hot_count = stats.column("k").heavy_hitters[0]
    assert hot_value == 1 and hot_count == pytest.approx(320000, rel=0.1)
    assert stats.column("id").ndv.precision == Precision.ESTIMATED


def test_several_tables_are_gathered_in_one_job(spark, stats_table):
    """gather_many: one query counts the big tables, one query passes over every table that
    lacks statistics (a sample of the big one); the statistics are those of a pass of its own.
    A table with current statistics, and a view, are left out."""
    spark.sql("DROP TABLE IF EXISTS st.big_many")
    spark.sql("""CREATE TABLE st.big_many USING parquet AS
                 SELECT id, IF(id % 10 < 8, 1, id % 100) AS k FROM range(400000)""")
    spark.sql("CREATE OR REPLACE VIEW st.events_many_v AS SELECT * FROM st.events")
    spark.sql("DROP TABLE IF EXISTS st.small_many")
    spark.sql("CREATE TABLE st.small_many USING parquet AS SELECT id, id % 3 AS k FROM range(50)")
    statements, execute = recording(spark)

    schema = "hiveopt_test_batch"
    spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    settings = dict(stats_schema=schema, sample_above_rows=100000, sample_rows=40000, sample_check_above_bytes=0)
    StatisticsService(execute, **settings).gather("st.small_many")  # current already, and stored
    s = StatisticsService(execute, **settings)
    s.project_words = {"st.big_many": {"id", "k"}, stats_table: {"hot_key", "name"}}
    statements.clear()
    gathered, seconds = s.gather_many(["st.big_many", stats_table, "st.events_many_v", "st.small_many"])
    assert set(gathered) == {"st.big_many", stats_table} and seconds > 0
    passes = [q for q in statements if "HLL_SKETCH_AGG" in q.upper()]
    counts = [q for q in statements if q.upper().startswith("SELECT 'ST.") and "APPROX" not in q.upper()]
    assert len(passes) == 1 and len(counts) == 1 and "TABLESAMPLE (10.0 PERCENT)" in passes[0]
    big = gathered["st.big_many"]
    assert big.row_count.value == 400000 and big.column("id").ndv.value == pytest.approx(400000, rel=0.15)
    assert big.column("k").heavy_hitters[0][0] == 1
    events = gathered[stats_table]
    assert set(events.columns) == {"hot_key", "name"}  # the columns the project's models name
    assert events.column("hot_key").heavy_hitters[0][0] == 7 and events.row_count.value == 20000
    assert events.column("name").null_count.value == 4000
    assert s.full_passes == {"st.big_many": 1, stats_table: 1}
    # asked again (another model): nothing left to gather, no pass
    statements.clear()
    assert s.gather_many(["st.big_many", stats_table]) == ({}, 0.0) and not statements
    assert s.current("st.big_many")[1] == "current"


def test_views_have_no_statistics(spark, stats_table):
    spark.sql("CREATE OR REPLACE VIEW st.events_v AS SELECT * FROM st.events")
    stats, state, _ = service(spark).ensure("st.events_v")
    assert stats is None and state.startswith("view")


def test_values_with_quotes_are_stored_as_literals(spark):
    spark.sql("DROP TABLE IF EXISTS st.quotes")
    spark.sql(
        """CREATE TABLE st.quotes USING parquet AS
           SELECT * FROM VALUES ('it''s'), ('back\\\\slash'), ('it''s') AS t(s)"""
    )
    s = service(spark)
    s.gather("st.quotes", key_columns=["s"])
    stats, state = service(spark).current("st.quotes")
    assert state == "current"
    assert dict(stats.column("s").heavy_hitters)["it's"] == 2
    assert "back\\slash" in dict(stats.column("s").heavy_hitters)


def test_a_store_of_many_saves_is_compacted_on_load(spark):
    """Each save is a partition of its own; a run's first model waits for reading them all, so a
    load that finds more than COMPACT_AFTER_SAVES writes the latest row per table as one save and
    drops the saves it read."""
    from dbt.adapters.hiveopt.statistics_store import COMPACT_AFTER_SAVES

    schema = "hiveopt_test_compact"
    spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("CREATE TABLE IF NOT EXISTS st.small USING parquet AS SELECT id FROM range(10)")
    writer = service(spark, schema)
    for _ in range(COMPACT_AFTER_SAVES + 2):
        writer.gather("st.small")
    saves = f"SELECT COUNT(DISTINCT save_id) AS n FROM {schema}.table_statistics"
    assert spark.sql(saves).collect()[0].n > COMPACT_AFTER_SAVES
    stats, state = service(spark, schema).current("st.small")
    assert state == "current" and stats.row_count.value == 10
    assert spark.sql(saves).collect()[0].n == 1
    assert spark.sql(f"SELECT COUNT(*) AS n FROM {schema}.table_statistics").collect()[0].n == 1
    again, _ = service(spark, schema).current("st.small")
    assert again.row_count.value == 10 and again.fingerprint == stats.fingerprint


def test_threads_gather_a_table_once_and_saves_never_collide(spark):
    """8 threads ask for the statistics of 4 tables at once: one full pass per table, the others
    wait and use it; the concurrent saves (one partition each) all land."""
    import threading

    schema = "hiveopt_test_threads"
    spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    for i in range(4):
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS st.many{i} USING parquet AS SELECT id, id % 7 AS k FROM range({100 + i})"
        )
    shared = service(spark, schema)
    errors, states = [], []

    def work(n):
        try:
            states.append(shared.ensure(f"st.many{n % 4}", ["k"])[1])
        except Exception as error:  # pragma: no cover - the assertion below shows it
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert shared.full_passes == {f"st.many{i}": 1 for i in range(4)}
    assert sorted(states).count("gathered") == 4 and sorted(states).count("current") == 4
    stored = spark.sql(f"SELECT table_name, COUNT(*) AS n FROM {schema}.table_statistics GROUP BY table_name").collect()
    assert {r.table_name: r.n for r in stored} == {f"st.many{i}": 1 for i in range(4)}


def test_a_store_that_cannot_be_written_warns_once_and_keeps_the_statistics(spark):
    schema = "hiveopt_test_readonly"
    spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    spark.sql(f"CREATE DATABASE {schema}")
    spark.sql(
        f"CREATE VIEW {schema}.table_statistics AS SELECT 'x' AS table_name, 'x' AS fingerprint, '0' AS saved_at, "
        "0.0 AS gather_seconds, '{}' AS payload, 'x' AS save_id WHERE 1 = 0"
    )
    warnings = []
    shared = StatisticsService(
        lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema=schema, warn=warnings.append
    )
    spark.sql("CREATE TABLE IF NOT EXISTS st.ro1 USING parquet AS SELECT id FROM range(5)")
    spark.sql("CREATE TABLE IF NOT EXISTS st.ro2 USING parquet AS SELECT id FROM range(6)")
    assert shared.ensure("st.ro1")[1] == "gathered" and shared.ensure("st.ro2")[1] == "gathered"
    assert shared.ensure("st.ro1")[1] == "current" and shared.ensure("st.ro1")[0].row_count.value == 5
    assert len(warnings) == 1 and "not saved" in warnings[0] and "\n" not in warnings[0]


def test_forgetting_outcomes_keeps_the_statistics(spark, stats_table):
    """Measured builds of a model can be forgotten (its rewrite is measured again); the statistics
    and the other models' outcomes stay."""
    from dbt.adapters.hiveopt.feedback import Outcome

    s = service(spark, schema="hiveopt_test_forget")
    s.gather(stats_table)
    for model in ("db.a", "db.b"):
        s.record_outcome(model, Outcome("optimized", "r1", 3.0, 100.0, "2026-11-20T06:00:00+00:00"))
    assert s.forget_outcomes(["db.a"]) == 1
    fresh = service(spark, schema="hiveopt_test_forget")
    assert fresh.outcomes("db.a") == {} and set(fresh.outcomes("db.b")) == {"optimized"}
    assert fresh.current(stats_table)[1] == "current"
    assert service(spark, schema="hiveopt_test_forget").forget_outcomes() == 1


def test_nothing_to_gain_is_remembered_in_the_store_and_forgotten_with_the_outcomes(spark, stats_table):
    """What the optimizer found nothing to gain on is a row of the store, read by another process
    (a new service), and forgotten with the model's outcomes; so is an original feedback kept."""
    from dbt.adapters.hiveopt.feedback import ORIGINAL_FASTER, NoGain, still_no_gain

    s = service(spark, schema="hiveopt_test_nogain")
    spark.sql("DROP DATABASE IF EXISTS hiveopt_test_nogain CASCADE")
    s.gather(stats_table)
    s.record_no_gain("db.m", NoGain("k1", 1000.0, "2026-11-26T06:00:00+00:00"))
    fresh = service(spark, schema="hiveopt_test_nogain")
    assert fresh.no_gain("db.m") == NoGain("k1", 1000.0, "2026-11-26T06:00:00+00:00")
    assert still_no_gain(fresh.no_gain("db.m"), "k1", 1200.0).startswith("no rewrite found a gain (remembered)")
    assert fresh.no_gain("db.other") is None
    assert fresh.forget_outcomes(["db.m"]) == 1
    assert service(spark, schema="hiveopt_test_nogain").no_gain("db.m") is None
    # A kept original is the same kind of memory, with feedback's why; a later one replaces it.
    kept = NoGain("k2", 500.0, "2026-11-26T07:00:00+00:00", ORIGINAL_FASTER, "kept original: 7.9 s vs 4.9 s")
    fresh.record_no_gain("db.m", kept)
    again = service(spark, schema="hiveopt_test_nogain")
    assert again.no_gain("db.m") == kept
    assert still_no_gain(again.no_gain("db.m"), "k2", 600.0).startswith(
        "feedback: the original was faster (remembered): kept original: 7.9 s vs 4.9 s; the same SQL"
    )


def test_a_seed_loaded_again_with_the_same_rows_is_not_saved_again(spark):
    """Every save is a partition the next load lists, and every `dbt build` loads its seeds again
    (the table created anew: a new creation time, the same rows). Statistics counted from the
    seed's file hold while the table keeps their size and dbt's graph names the same file: they are
    not saved again (nor counted, nor the table described), and a later invocation that does not
    load the seed uses them. The memory of decisions takes such a seed's size from them too."""
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP DATABASE IF EXISTS hiveopt_test_resave CASCADE")

    def load(rows):
        load_seedlike(spark, "st.seedlike", rows)

    def invocation(rows, seed_file):
        sent = []

        def execute(sql):
            sent.append(sql)
            return [tuple(r) for r in spark.sql(sql).collect()]

        s = StatisticsService(execute, stats_schema="hiveopt_test_resave", defer_saves=True)
        s.load()
        s.hold_rows("st.seedlike", rows, seed_file)
        sizes.append(s.reloaded_size("st.seedlike"))
        s.flush()
        # In a build the save behind the seeds runs a second after them, before most marts ask:
        # the answer holds after it.
        after_save.append(s.reloaded_size("st.seedlike"))
        return [sql for sql in sent if "table_statistics" not in sql]  # the store's own statements aside

    def saves():
        return spark.sql("SELECT COUNT(DISTINCT save_id) AS n FROM hiveopt_test_resave.table_statistics").collect()[0].n

    def state_for(seed_file):
        reader = service(spark, "hiveopt_test_resave")
        reader.seed_files = {"st.seedlike": seed_file} if seed_file else {}
        return reader.current("st.seedlike")[1]

    rows = [(i, i % 3) for i in range(20)]
    sizes, after_save = [], []
    load(rows)
    invocation(rows, "sha-1")
    assert saves() == 1
    time.sleep(1.1)  # the catalog's creation time counts seconds
    load(rows)
    # Loaded again from the same file: nothing to save, so neither counted nor described; its
    # size is the stored statistics' (the table's, as the catalog has it).
    assert invocation(rows, "sha-1") == []
    assert saves() == 1
    size = service(spark, "hiveopt_test_resave").describe("st.seedlike").size_bytes
    assert sizes[:2] == [None, float(size)], (sizes, size)
    assert after_save[1] == float(size), after_save
    assert state_for("sha-1") == "current"
    assert state_for("sha-2").startswith("stale")  # the project's file changed since: counted again
    assert state_for(None).startswith("stale")  # nothing says which file the table came from
    rows.append((99, 0))  # other rows: saved
    load(rows)
    invocation(rows, "sha-2")
    assert saves() == 2
    assert sizes[2] is None  # another file: its size is the catalog's
    assert after_save[2] is None
    assert state_for("sha-2") == "current"


def test_a_seed_loaded_again_is_not_described_where_nothing_read_the_store_first(spark):
    """A project whose models read only seeds (jaffle_shop's) has no sources for the run's start to
    read the store for: the save behind the seeds reads it before it compares, and a seed loaded
    again from the same file is neither described nor counted (before, every build sent a SHOW
    TABLE EXTENDED of its seeds beside the staging views, then found nothing to save)."""
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP DATABASE IF EXISTS hiveopt_test_unread CASCADE")
    rows = [(i, i % 3) for i in range(20)]

    def invocation():
        load_seedlike(spark, "st.seed_unread", rows)
        statements, execute = recording(spark)
        s = StatisticsService(execute, stats_schema="hiveopt_test_unread", defer_saves=True)
        s.hold_rows("st.seed_unread", rows, "sha-1")
        s.flush()
        return [sql for sql in statements if "table_statistics" not in sql]  # the store's own aside

    assert [sql for sql in invocation() if "st.seed_unread" in sql or "seed_unread" in sql]  # counted once
    time.sleep(1.1)  # the catalog's creation time counts seconds
    assert invocation() == []


def test_a_seed_loaded_again_from_the_same_file_needs_no_size_in_the_catalog(spark):
    """The session keeps no size on INSERT (as dbt-spark's: keeping it wrote the metastore on every
    seed's and incremental model's INSERT). Statistics counted from a seed's file measured its size
    once (`ANALYZE ... NOSCAN`); the seed loaded again from that file takes the size they have, with
    no ANALYZE, and they are current for it. An invocation that did not load it (a `dbt run`)
    measures its size, and they still hold: the same rows were written again."""
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP DATABASE IF EXISTS hiveopt_test_nosize CASCADE")
    rows = [(i, i % 3) for i in range(20)]

    def load():
        load_seedlike(spark, "st.seed_nosize", rows)
        described = spark.sql("DESCRIBE TABLE EXTENDED st.seed_nosize").collect()
        assert not [r for r in described if r[0] == "Statistics"], described  # no size kept

    def invocation(loaded):
        statements, execute = recording(spark)
        s = StatisticsService(execute, stats_schema="hiveopt_test_nosize", defer_saves=True)
        s.seed_files = {"st.seed_nosize": "sha-1"}
        s.load()
        if loaded:
            s.hold_rows("st.seed_nosize", rows, "sha-1")
        stats, state = s.current("st.seed_nosize")
        s.flush()
        analyzed = [sql for sql in statements if sql.startswith("ANALYZE TABLE st.seed_nosize")]
        return stats, state, analyzed

    load()
    first, state, analyzed = invocation(loaded=True)
    assert state == "current" and len(analyzed) == 1 and first.row_count.is_exact  # counted, measured once
    time.sleep(1.1)  # the catalog's creation time counts seconds
    load()
    again, state, analyzed = invocation(loaded=True)
    assert state == "current" and analyzed == [], analyzed
    assert again.size_bytes.value == first.size_bytes.value and again.columns["g"].ndv.value == 3
    run, state, analyzed = invocation(loaded=False)  # not loaded by this invocation: measured
    assert state == "current" and len(analyzed) == 1 and run.size_bytes.value == first.size_bytes.value


def test_a_seeds_rows_are_counted_when_first_read_or_when_saved(spark):
    """A seed's loaded rows are held with no statement of their own; counted, with the table's
    fingerprint as it is now, when something first reads the statistics, or when they are saved
    (a `dbt seed` that no model reads after); never with a Spark pass over the table."""
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP DATABASE IF EXISTS hiveopt_test_held CASCADE")
    for name in ("st.held_read", "st.held_saved"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} USING parquet AS SELECT id, id % 3 AS g FROM range(20)")
    rows = [tuple(r) for r in spark.sql("SELECT id, g FROM st.held_read").collect()]
    statements, execute = recording(spark)

    s = StatisticsService(execute, stats_schema="hiveopt_test_held", defer_saves=True)
    s.hold_rows("st.held_read", rows)
    s.hold_rows("st.held_saved", rows)
    assert statements == [] and s.pending == 2

    stats, state = s.current("st.held_read")
    assert state == "current" and stats.row_count.value == 20 and stats.row_count.is_exact
    assert stats.columns["g"].ndv.value == 3 and stats.columns["g"].ndv.is_exact
    assert stats.fingerprint == service(spark).describe("st.held_read").fingerprint
    assert not [q for q in statements if "count(" in q.lower()], statements
    assert s.pending == 2  # one counted and waiting for the save, one still held

    s.flush()
    assert s.pending == 0
    fresh = service(spark, "hiveopt_test_held")
    for name in ("st.held_read", "st.held_saved"):
        stats, state = fresh.current(name)
        assert state == "current" and stats.row_count.value == 20, (name, state)
    assert not [q for q in statements if "count(" in q.lower()], statements


def test_show_table_extended_says_what_describe_says(spark):
    """describe_many reads several relations with one SHOW TABLE EXTENDED per database: for
    tables, partitioned and bucketed ones, and views, the same facts as one DESCRIBE each."""
    from dbt.adapters.hiveopt.table_info import parse_describe

    spark.sql("CREATE DATABASE IF NOT EXISTS stx")
    for table in ("plain", "parted", "bucketed"):
        spark.sql(f"DROP TABLE IF EXISTS stx.{table}")
    spark.sql(
        "CREATE TABLE stx.plain USING parquet AS SELECT id, CAST(id AS DECIMAL(15, 2)) AS d, 'x' AS s FROM range(5)"
    )
    spark.sql(
        "CREATE TABLE stx.parted (a BIGINT, n STRUCT<x: INT, y: ARRAY<STRING>>, p INT) USING parquet PARTITIONED BY (p)"
    )
    spark.sql("CREATE TABLE stx.bucketed (k INT, v SMALLINT) USING parquet CLUSTERED BY (k) INTO 4 BUCKETS")
    spark.sql("CREATE OR REPLACE VIEW stx.v AS SELECT id AS k,\n  s\nFROM stx.plain WHERE d > 1")
    for table in ("plain", "parted", "bucketed"):
        spark.sql(f"ANALYZE TABLE stx.{table} COMPUTE STATISTICS NOSCAN")
    names = ["stx.plain", "stx.parted", "stx.bucketed", "stx.v"]
    statements, execute = recording(spark)

    s = StatisticsService(execute, stats_schema="hiveopt_test_show")
    s.describe_many(names)
    assert statements == ["SHOW TABLE EXTENDED IN stx LIKE 'bucketed|parted|plain|v'"]
    for name in names:
        one = parse_describe(name, [tuple(r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()])
        many = s.describe(name)
        assert (many.columns.keys(), many.kind, many.created, many.size_bytes) == (
            one.columns.keys(),
            one.kind,
            one.created,
            one.size_bytes,
        ), name
        assert {c: t.split("<")[0] for c, t in one.columns.items()} == many.columns, name
        assert (many.partition_columns, many.bucket_columns, many.view_text, many.view_db) == (
            one.partition_columns,
            one.bucket_columns,
            one.view_text,
            one.view_db,
        ), name
    assert len(statements) == 1  # every one answered by the one statement


def test_describe_all_skips_what_show_table_extended_did_not_list(spark):
    """A relation the database's SHOW TABLE EXTENDED does not list is not in the catalog: the
    read-ahead's describe_all leaves it out with no failing DESCRIBE of its own; a database the
    SHOW cannot read leaves its relations to one DESCRIBE each."""
    spark.sql("CREATE DATABASE IF NOT EXISTS stx_absent")
    spark.sql("DROP TABLE IF EXISTS stx_absent.here")
    spark.sql("CREATE TABLE stx_absent.here USING parquet AS SELECT id FROM range(3)")
    spark.sql("ANALYZE TABLE stx_absent.here COMPUTE STATISTICS NOSCAN")
    statements, execute = recording(spark)

    s = StatisticsService(execute, stats_schema="hiveopt_test_absent")
    infos = s.describe_all(["stx_absent.here", "stx_absent.gone", "stx_absent.never", "no_such_db.a", "no_such_db.b"])
    assert sorted(infos) == ["stx_absent.here"]
    assert [q for q in statements if "stx_absent" in q] == ["SHOW TABLE EXTENDED IN stx_absent LIKE 'gone|here|never'"]
    # The database that does not exist: its SHOW failed, so each relation got its DESCRIBE.
    assert [q for q in statements if q.startswith("DESCRIBE")] == [
        "DESCRIBE TABLE EXTENDED no_such_db.a",
        "DESCRIBE TABLE EXTENDED no_such_db.b",
    ]
    # Nothing about the absent ones is kept: once created, describe() finds them.
    spark.sql("CREATE TABLE stx_absent.gone USING parquet AS SELECT id FROM range(2)")
    try:
        assert "id" in s.describe("stx_absent.gone").columns
    finally:
        spark.sql("DROP TABLE IF EXISTS stx_absent.gone")


def test_a_store_read_this_invocation_is_saved_to_without_ddl(spark, stats_table):
    """A store the invocation has read exists: its saves issue no CREATE DATABASE or CREATE TABLE
    (0.2-0.5 s per invocation over Thrift); a store not there yet is created by the first save."""
    spark.sql("DROP DATABASE IF EXISTS hiveopt_test_ddl CASCADE")
    statements, execute = recording(spark)
    first = StatisticsService(execute, stats_schema="hiveopt_test_ddl")
    first.load()  # not there: an empty store, nothing created by a read
    first.gather(stats_table)
    created = [q for q in statements if q.upper().startswith("CREATE")]
    assert len(created) == 2, created  # the database and the table, by the first save
    statements.clear()
    second = StatisticsService(execute, stats_schema="hiveopt_test_ddl")
    second.load()
    second.save(stats_table, first.current(stats_table)[0], 0.1)
    assert not [q for q in statements if q.upper().startswith("CREATE")], statements
    assert [q for q in statements if q.upper().startswith("INSERT")]
    assert second.current(stats_table)[1] == "current"
