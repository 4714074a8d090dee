"""A project as analytics engineers build it: seeds, staging views over sources and seeds, and a
mart that joins four views in a bad order. Through real dbt runs on the session, next to plain
dbt-spark:

- the mart is reordered and hinted through the views (their statistics derived from their
  definitions down to the seeds' and sources' statistics), and its rows equal dbt-spark's;
- seeds get statistics when `dbt seed` loads them (exact distinct counts: they are small), counted
  from the rows dbt read from the CSV (read once) and saved behind the build;
- a single-table view model costs nothing: it issues exactly the statements dbt-spark issues;
- a view model fixes no join algorithm and starts no statistics pass (a view is planned when read);
- a view over a rebuilt table gets fresh estimates in the next run;
- a join the optimizer found nothing to gain on runs as written at once on the next builds;
- Spark honours a BROADCAST hint that names a view's alias;
- the run ends with one line saying what the optimizer did.
"""

import json
import os
import re
import textwrap
from collections import Counter

import pytest
from helpers.dbt_run import Events, run_dbt

from dbt.adapters.hiveopt.model_inputs import FIRST_PASS, FIRST_PASS_STATE

pytestmark = pytest.mark.integration

SOURCE_DB = "vws_src"
REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]


def _write(root, files):
    for path, text in files.items():
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())


def project(root, orders_rows=60000):
    nations = "nation_key,nation_name,region_key\n" + "".join(f"{i},NATION {i},{i % 5}\n" for i in range(25))
    regions = "region_key,region_name\n" + "".join(f"{i},{name}\n" for i, name in enumerate(REGIONS))
    files = {
        "dbt_project.yml": f"""
            name: views
            version: "1.0"
            config-version: 2
            profile: views
            on-run-start:
              - "create database if not exists {SOURCE_DB}"
              - "create table if not exists {SOURCE_DB}.customers using parquet as select id as c_id,
                 cast(id % 25 as int) as c_nation, concat('customer ', cast(id as string)) as c_name,
                 concat('note ', cast(id as string)) as c_note from range(6000)"
              - "create table if not exists {SOURCE_DB}.orders using parquet as select id as o_id,
                 id % 6000 as o_customer, cast(id % 997 as double) as o_amount from range({orders_rows})"
            models:
              views:
                staging:
                  +materialized: view
                marts:
                  +materialized: table
            """,
        "seeds/nations.csv": nations,
        "seeds/regions.csv": regions,
        "models/staging/sources.yml": f"""
            version: 2
            sources:
              - name: shop
                schema: {SOURCE_DB}
                tables: [{{name: customers}}, {{name: orders}}]
            """,
        # dbt's import-CTE style (jaffle_shop's staging models): one relation read through a chain
        # of CTEs, no join, no subquery.
        "models/staging/stg_customers.sql": """
            with source as (
                select * from {{ source('shop', 'customers') }}
            ),
            renamed as (
                select c_id as customer_id, c_nation as nation_key, c_name as customer_name
                from source
            )
            select * from renamed
            """,
        "models/staging/stg_orders.sql": """
            select o_id as order_id, o_customer as customer_id, o_amount as amount
            from {{ source('shop', 'orders') }}
            """,
        "models/staging/stg_nations.sql": "select nation_key, nation_name, region_key from {{ ref('nations') }}\n",
        "models/staging/stg_regions.sql": "select region_key, region_name from {{ ref('regions') }}\n",
        # As the business reads it, region down to the orders: written so, the fact is the last
        # join's right side (the side Spark builds from); a reorder exists for this.
        "models/marts/asia_revenue.sql": """
            select n.nation_name, sum(o.amount) as revenue, count(*) as orders
            from {{ ref('stg_regions') }} r
            join {{ ref('stg_nations') }} n on n.region_key = r.region_key
            join {{ ref('stg_customers') }} c on c.nation_key = n.nation_key
            join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
            where r.region_name = 'ASIA'
            group by n.nation_name
            """,
    }
    _write(root, files)


def profiles(root, schema):
    _write(
        root,
        {
            "profiles.yml": f"""
        views:
          target: hiveopt
          outputs:
            hiveopt:
              type: hiveopt
              method: session
              schema: {schema}
              threads: 4
              optimizer:
                stats:
                  schema: {schema}_stats
            spark:
              type: spark
              method: session
              host: localhost
              schema: {schema}_plain
              threads: 4
        """
        },
    )


class Statements(Events):
    """dbt's events, and the SQL statements each node's connection sent."""

    def __init__(self):
        super().__init__()
        self.by_node = {}
        self.order = []  # (connection, statement), as sent

    def __call__(self, event):
        super().__call__(event)
        if event.info.name == "SQLQuery":
            self.by_node.setdefault(event.data.conn_name, []).append(event.data.sql)
            self.order.append((event.data.conn_name, event.data.sql))


def dbt(root, *args, events=None):
    return run_dbt([*args, "--project-dir", str(root), "--profiles-dir", str(root)], events)


def dbt_broadcasting_under(spark, root, threshold, *args, events=None):
    """dbt with Spark's broadcast line lowered on the session for the invocation (the adapter reads
    it from the session): as if the tables were big."""
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(threshold))
    try:
        return dbt(root, *args, events=events)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def record(root, model):
    with open(root / "target" / "hiveopt" / f"{model}.json") as handle:
        return json.load(handle)


@pytest.fixture()
def views_project(spark, tmp_path):
    for db in (SOURCE_DB, "vws", "vws_stats", "vws_plain"):
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
    project(tmp_path)
    profiles(tmp_path, "vws")
    return tmp_path


def test_mart_over_views_is_reordered_and_hinted(spark, views_project):
    """Spark's broadcast line lowered to 16 KB for the build (the adapter reads it from the
    session), as if the sources were big: Spark broadcasts the seeds by itself, and the staging
    views over the sources need the optimizer's estimates after their filters."""
    root = views_project
    events = Statements()
    result = dbt_broadcasting_under(spark, root, 16 * 1024, "build", events=events)
    assert result.success, [(r.node.name, r.status, r.message) for r in result.result.results]

    mart = record(root, "asia_revenue")
    assert mart["fired_rules"][:1] == ["reorder_joins"] and "select_join_algorithms" in mart["fired_rules"]
    assert "BROADCAST(" in mart["optimized_sql"]
    # The seeds are tiny on disk: Spark broadcasts them by itself, and no hint says it again.
    reasons = [d["reason"] for r in mart["rules"] if r["rule"] == "select_join_algorithms" for d in r["decisions"]]
    assert [r for r in reasons if r.startswith("Spark does this already: it broadcasts n (vws.stg_nations)")], reasons
    assert "BROADCAST(n)" not in mart["optimized_sql"]
    # Every view the mart reads was estimated through its definition, down to tables with statistics.
    for view, base in (
        ("stg_orders", f"{SOURCE_DB}.orders"),
        ("stg_customers", f"{SOURCE_DB}.customers"),
        ("stg_nations", "vws.nations"),
        ("stg_regions", "vws.regions"),
    ):
        state = mart["statistics_gathering"][f"vws.{view}"]["state"]
        assert state == f"view: estimated through its definition over {base}", state
        assert mart["statistics_used"][f"vws.{view}"]["precision"] != "absent"
    assert mart["statistics_used"]["vws.stg_orders"]["rows"] == 60000
    # The mart's keys reached the base tables: heavy hitters gathered for the columns behind them.
    stored = {
        r.table_name: json.loads(r.payload)
        for r in spark.sql("SELECT table_name, payload FROM vws_stats.table_statistics").collect()
    }
    assert stored[f"{SOURCE_DB}.orders"]["columns"]["o_customer"].get("heavy_hitters") is not None
    # stg_customers imports its source whole (`select *` in its first CTE) and renames three columns:
    # the first pass read those, and no narrow pass came after it for the note no model reads.
    assert mart["statistics_gathering"][f"{SOURCE_DB}.customers"]["state"] == FIRST_PASS_STATE, mart[
        "statistics_gathering"
    ]
    # Seeds got statistics as dbt seed loaded them, counted from the CSV's rows with no Spark job:
    # exact, with detail for every column, so the mart needed no second pass over them.
    assert stored["vws.nations"]["columns"]["nation_key"]["ndv"] == {"value": 25.0, "precision": "exact"}
    assert all(c.get("heavy_hitters") for c in stored["vws.nations"]["columns"].values())
    (seed_statements,) = [s for node, s in events.by_node.items() if node.endswith("seed.views.nations")]
    assert not [s for s in seed_statements if "count(" in s.lower()], seed_statements
    assert mart["statistics_gathering"]["vws.nations"]["state"] == "current"
    assert not [name for name in stored if name.startswith("vws.stg_")]
    # The views this build made and the seeds under them, read from the catalog in one statement
    # (dbt's graph says what is under a view before the catalog does). The seeds' first load keeps
    # no size in the catalog (as dbt-spark's session): whoever counts a seed's rows first (this
    # mart, or the save behind the seeds) measures it once; a load from the same file never again.
    (mart_statements,) = [s for node, s in events.by_node.items() if node.endswith(".asia_revenue")]
    catalog = [s for s in mart_statements if re.search(r"\b(describe|show table)\b", s, re.I) and "vws" in s]
    sent = [c.split("*/")[-1].strip() for c in catalog]  # dbt's query comment aside
    views = [s for s in sent if "stg_" in s]
    assert len(views) == 1 and "'nations|regions|stg_customers|stg_nations|stg_orders|stg_regions'" in views[0], sent
    seeds_measured = [s for s in sent if s not in views]
    assert all(re.search(r"\bvws\.?(nations|regions)|'nations\|regions'", s) for s in seeds_measured), sent
    # The run's read-ahead described the sources once its on-run-start hooks had created them.
    created = next(
        i for i, (_, sql) in enumerate(events.order) if f"create table if not exists {SOURCE_DB}.orders" in sql
    )
    described = [
        i for i, (name, sql) in enumerate(events.order) if name == "hiveopt-ahead" and f"IN {SOURCE_DB} LIKE" in sql
    ]
    assert described and min(described) > created, described
    # Saved behind the build on a connection of its own, not after the last model.
    saved = [s for s in events.by_node.get("hiveopt-save", []) if "INSERT OVERWRITE" in s.upper()]
    assert saved and all("table_statistics" in s for s in saved), sorted(events.by_node)
    # One closing line.
    (line,) = events.matching("models: ")
    assert "5 models: 1 optimized, 4 unchanged (4 no join or subquery), 0 fell back" in line, line

    # The same project with plain dbt-spark: the same rows.
    plain = dbt(root, "build", "--target", "spark")
    assert plain.success
    ours = Counter(tuple(r) for r in spark.sql("SELECT * FROM vws.asia_revenue").collect())
    theirs = Counter(tuple(r) for r in spark.sql("SELECT * FROM vws_plain.asia_revenue").collect())
    assert ours == theirs and len(ours) == 5


def test_a_seed_file_is_read_once(spark, views_project, monkeypatch):
    """dbt's seed materialization reads each CSV into an agate table, inferring every cell's type
    (0.3 s for a 10,000-row seed of 6 columns). The seed's statistics are counted from that table,
    not from a second reading, and dbt's seed task still gets it back (its results carry it)."""
    from dbt_common.clients import agate_helper

    read = Counter()
    real = agate_helper.from_csv

    def counting(path, *args, **kwargs):
        read[os.path.basename(path)] += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(agate_helper, "from_csv", counting)
    result = dbt(views_project, "seed")
    assert result.success
    assert read == Counter({"nations.csv": 1, "regions.csv": 1}), read
    loaded = {r.node.name: r.agate_table for r in result.result.results if r.node.resource_type == "seed"}
    assert {name: len(table.rows) for name, table in loaded.items()} == {"nations": 25, "regions": 5}
    stored = {
        r.table_name: json.loads(r.payload)
        for r in spark.sql("SELECT table_name, payload FROM vws_stats.table_statistics").collect()
    }
    assert stored["vws.nations"]["columns"]["nation_key"]["ndv"] == {"value": 25.0, "precision": "exact"}
    assert stored["vws.regions"]["row_count"]["value"] == 5


def _costs_nothing(root, view):
    """`view` built alone sends the statements dbt-spark sends, and nothing beside them."""
    assert dbt(root, "seed").success
    counts = {}
    for target in ("hiveopt", "spark"):
        events = Statements()
        assert dbt(root, "run", "--select", view, "--target", target, events=events).success
        (statements,) = [s for node, s in events.by_node.items() if node.endswith(f".{view}")]
        # dbt's query comment names the target; the rest must be the same statements.
        counts[target] = [
            " ".join(re.sub(r"^/\*.*?\*/", "", s).split()).replace("vws_plain.", "vws.") for s in statements
        ]
        if target == "hiveopt":
            # Nor anything beside it: the read-ahead reads for the selected models only (dbt's
            # selected resources), and a view reads nothing ahead (the mart's sources stay unread).
            assert "hiveopt-ahead" not in events.by_node, events.by_node.get("hiveopt-ahead")
    assert counts["hiveopt"] == counts["spark"], counts
    assert record(root, view)["unchanged_reason"] == "no join or subquery"


def test_a_view_over_one_table_through_ctes_costs_nothing(spark, views_project):
    """stg_customers reads one table through a chain of CTEs (dbt's import-CTE style), with no join
    and no subquery: no rule has anything to work on, and hiveopt adds no statement to it."""
    _costs_nothing(views_project, "stg_customers")


def test_a_single_table_view_costs_nothing(spark, views_project):
    """stg_orders reads one table, with no join or subquery: hiveopt adds no statement to it."""
    root = views_project
    _costs_nothing(root, "stg_orders")
    # Analyzing a view analyzes what it reads, and says so.
    events = Events()
    assert dbt(root, "run-operation", "hiveopt_analyze", "--args", "{models: [stg_orders]}", events=events).success
    assert events.matching(
        "hiveopt: vws.stg_orders is a view: it has no statistics of its own; models estimate it "
        f"through its definition over {SOURCE_DB}.orders, analyzed now"
    )
    assert events.matching(f"hiveopt: analyzed {SOURCE_DB}.orders: 60000 rows")
    # Every column read; detail (heavy hitters) for what the project's models use as keys, as a
    # build's first pass gives: the mart joins on o_customer, through the view; o_amount is summed.
    (latest,) = spark.sql(
        f"SELECT payload FROM vws_stats.table_statistics WHERE table_name = '{SOURCE_DB}.orders' "
        "ORDER BY saved_at DESC LIMIT 1"
    ).collect()
    columns = json.loads(latest.payload)["columns"]
    assert sorted(columns) == ["o_amount", "o_customer", "o_id"]
    assert columns["o_customer"]["heavy_hitters"] is not None
    assert columns["o_amount"].get("heavy_hitters") is None and columns["o_id"].get("heavy_hitters") is None


def test_an_empty_build_gathers_nothing(spark, views_project):
    """`dbt run --empty` (dbt reads every ref and source as `... where false limit 0`: a schema
    check, often in CI) reads no rows: hiveopt gathers no statistics for it, on the models' path
    or after their builds, and runs each model as dbt compiled it."""
    root = views_project
    assert dbt(root, "seed").success
    events = Statements()
    assert dbt(root, "run", "--empty", events=events).success
    passes = [s for statements in events.by_node.values() for s in statements if "hll_sketch_agg" in s.lower()]
    assert passes == []
    mart = record(root, "asia_revenue")
    assert mart["unchanged_reason"] == "an --empty build (it reads no rows)", mart["unchanged_reason"]
    assert mart["statistics_gathering"] == {}


def test_view_models_fix_no_physical_choice_and_gather_nothing(spark, views_project):
    """A view is a stored definition, planned when it is read: a view model gets no join
    algorithm, hot keys or partition values chosen from today's data, and creating it (it runs no
    query) starts no statistics pass. A view with one join has nothing else to rewrite: it issues
    the statements dbt-spark issues. A view with a join order to choose goes through the logical
    rules with the statistics at hand."""
    root = views_project
    _write(
        root,
        {
            "models/marts/customer_spend.sql": """
            {{ config(materialized='view') }}
            select c.customer_id, c.customer_name, sum(o.amount) as spend
            from {{ ref('stg_customers') }} c
            left join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
            group by c.customer_id, c.customer_name
            """,
            "models/marts/nation_spend.sql": """
            {{ config(materialized='view') }}
            select n.nation_name, sum(o.amount) as spend
            from {{ ref('stg_nations') }} n
            join {{ ref('stg_customers') }} c on c.nation_key = n.nation_key
            join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
            group by n.nation_name
            """,
        },
    )
    counts = {}
    for target in ("hiveopt", "spark"):
        assert dbt(root, "seed", "--target", target).success
        events = Statements()
        assert dbt(
            root, "run", "--select", "+customer_spend", "+nation_spend", "--target", target, events=events
        ).success
        (statements,) = [s for node, s in events.by_node.items() if node.endswith(".customer_spend")]
        counts[target] = len(statements)
        if target == "hiveopt":
            (nation_statements,) = [s for node, s in events.by_node.items() if node.endswith(".nation_spend")]
            assert not [s for s in nation_statements if "hll_sketch_agg" in s.lower()], nation_statements
    assert counts["hiveopt"] == counts["spark"], counts
    assert record(root, "customer_spend")["unchanged_reason"] == "a view with one join and no subquery"
    nation = record(root, "nation_spend")
    assert nation["statistics_gathering"][f"{SOURCE_DB}.orders"]["state"] == (
        "never gathered; not gathered for a view model (the models that read it gather them)"
    )
    assert "BROADCAST" not in nation["optimized_sql"].upper()
    (skipped,) = [d["reason"] for r in nation["rules"] if r["rule"] == "select_join_algorithms" for d in r["decisions"]]
    assert skipped.startswith("materialized as view: a stored definition does not fix join algorithms"), skipped
    # One row per customer, every order's amount in it (whole numbers: sums are exact).
    total = spark.sql(f"SELECT SUM(o_amount) FROM {SOURCE_DB}.orders").collect()[0][0]
    assert tuple(spark.sql("SELECT COUNT(*), SUM(spend) FROM vws.customer_spend").collect()[0]) == (6000, total)
    assert tuple(spark.sql("SELECT COUNT(*), SUM(spend) FROM vws.nation_spend").collect()[0]) == (25, total)


def test_an_incremental_model_does_not_gather_its_own_table(spark, views_project):
    """An incremental run reads its own table in its is_incremental() filter: statistics of it
    would be stale once the run writes to it, so no pass is started over it."""
    root = views_project
    _write(
        root,
        {
            "models/marts/order_totals.sql": """
        {{ config(materialized='incremental') }}
        select o.order_id, o.amount, c.customer_name
        from {{ ref('stg_orders') }} o
        join {{ ref('stg_customers') }} c on c.customer_id = o.customer_id
        {% if is_incremental() %}
        where o.order_id > (select max(order_id) from {{ this }})
        {% endif %}
        """
        },
    )
    assert dbt(root, "run", "--select", "+order_totals").success
    events = Statements()
    assert dbt(root, "run", "--select", "order_totals", events=events).success
    (statements,) = [s for node, s in events.by_node.items() if node.endswith(".order_totals")]
    passes = [s for s in statements if "hll_sketch_agg" in s.lower()]
    assert not [s for s in passes if "vws.order_totals" in s.lower()], passes
    state = record(root, "order_totals")["statistics_gathering"]["vws.order_totals"]["state"]
    assert state.endswith("; the table this model builds"), state
    assert spark.sql("SELECT COUNT(*) FROM vws.order_totals").collect()[0][0] == 60000


def test_a_view_over_a_rebuilt_table_gets_fresh_estimates(spark, views_project):
    root = views_project
    assert dbt(root, "build").success
    assert record(root, "asia_revenue")["statistics_used"]["vws.stg_orders"]["rows"] == 60000
    # The source is rebuilt with more rows: its fingerprint changes, the view's estimate follows.
    spark.sql(f"DROP TABLE {SOURCE_DB}.orders")
    project(root, orders_rows=90000)
    assert dbt(root, "run", "--select", "asia_revenue").success
    mart = record(root, "asia_revenue")
    assert mart["statistics_used"]["vws.stg_orders"]["rows"] == 90000
    # gathered again, by the invocation's one pass over the tables its models read
    assert mart["statistics_gathering"][f"{SOURCE_DB}.orders"]["state"].startswith("gathered")
    assert f"{SOURCE_DB}.orders" in mart["statistics_gathering"][FIRST_PASS]["tables"]


def _looked_then_again(root, name, sql, command, *selected):
    """A mart `name` over `sql` built with what it reads (`command`: run or build): the optimizer
    looked and found nothing to gain. Then `command` again over `selected`: its events."""
    _write(root, {f"models/marts/{name}.sql": sql})
    assert dbt(root, command, "--select", f"+{name}").success
    first = record(root, name)
    assert not first["changed"] and first["unchanged_reason"] is None and first["rules"], first
    events = Statements()
    assert dbt(root, command, "--select", *selected, events=events).success
    return events


def test_a_join_with_nothing_to_gain_is_remembered(spark, views_project):
    """The optimizer looked at a join and found nothing to gain (Spark broadcasts the customers by
    itself): the next builds of the same SQL run it as written at once, with no catalog read for
    its views, no statistics and no optimizer, until what it reads changes size by more than 2x."""
    root = views_project
    sql = """
        select o.order_id, o.amount, c.customer_name
        from {{ ref('stg_orders') }} o
        join {{ ref('stg_customers') }} c on c.customer_id = o.customer_id
        """
    events = _looked_then_again(root, "order_customers", sql, "run", "order_customers")
    second = record(root, "order_customers")
    assert second["unchanged_reason"].startswith("no rewrite found a gain (remembered): decided on "), second
    assert second["rules"] == [] and second["statistics_gathering"] == {}
    (statements,) = [s for node, s in events.by_node.items() if node.endswith(".order_customers")]
    # (the sources' catalog entries may be read on this connection: the run's start reads them ahead)
    looked = [s for s in statements if re.search(r"\b(describe|show table|analyze)\b", s, re.I) and "stg_" in s]
    assert not looked and not [s for s in statements if "hll_sketch_agg" in s.lower()], statements
    (line,) = events.matching("models: ")
    assert "1 unchanged (1 no rewrite found a gain (remembered))" in line, line
    # The orders grow past twice their size: the optimizer looks again (and remembers again).
    spark.sql(f"DROP TABLE {SOURCE_DB}.orders")
    project(root, orders_rows=200000)
    assert dbt(root, "run", "--select", "order_customers").success
    third = record(root, "order_customers")
    assert third["unchanged_reason"] is None and third["rules"], third
    assert spark.sql("SELECT COUNT(*) FROM vws.order_customers").collect()[0][0] == 200000


def test_a_remembered_join_over_a_seed_reads_no_catalog_when_the_seed_loads_again(spark, views_project):
    """Every `dbt build` loads the seeds again. A mart remembered as having nothing to gain, reading
    a seed through a view, takes the seed's size from its stored statistics when the seed was
    loaded from the same file: its build sends no catalog read for the seed (revenue_by_nation in
    the example project spent a median 102 ms before its build on one)."""
    root = views_project
    sql = """
        select c.customer_name, n.nation_name
        from {{ ref('stg_customers') }} c
        join {{ ref('stg_nations') }} n on n.nation_key = c.nation_key
        """
    events = _looked_then_again(root, "customer_nations", sql, "build", "nations", "customer_nations")
    second = record(root, "customer_nations")
    assert second["unchanged_reason"].startswith("no rewrite found a gain (remembered)"), second
    (statements,) = [s for node, s in events.by_node.items() if node.endswith(".customer_nations")]
    looked = [s for s in statements if re.search(r"\b(describe|show table)\b", s, re.I) and "nations" in s]
    assert not looked, statements
    assert spark.sql("SELECT COUNT(*) FROM vws.customer_nations").collect()[0][0] == 6000


def test_a_seed_loaded_again_is_not_measured(spark, views_project):
    """The session keeps no table size on INSERT, as dbt-spark's does not: a seed's load writes no
    statistics to the metastore. Its statistics were counted from its file (its size measured
    once); every `dbt build` loads it again from that file, and a new mart reading it through a
    view finds them current with no `ANALYZE ... NOSCAN` for its size."""
    root = views_project
    assert dbt(root, "build").success  # the seeds' first load: counted, and their size measured
    _write(
        root,
        {
            "models/marts/nation_customers.sql": """
                select n.nation_name, count(*) as customers
                from {{ ref('stg_customers') }} c
                join {{ ref('stg_nations') }} n on n.nation_key = c.nation_key
                group by n.nation_name
                """
        },
    )
    events = Statements()
    assert dbt(root, "build", events=events).success
    mart = record(root, "nation_customers")
    assert mart["statistics_gathering"]["vws.nations"]["state"] == "current", mart["statistics_gathering"]
    assert mart["statistics_used"]["vws.stg_nations"]["rows"] == 25
    analyzed = [sql for _, sql in events.order if re.search(r"\banalyze table\b", sql, re.I)]
    assert not [sql for sql in analyzed if re.search(r"\b(nations|regions)\b", sql)], analyzed
    for seed in ("nations", "regions"):
        described = spark.sql(f"DESCRIBE TABLE EXTENDED vws.{seed}").collect()
        assert not [r for r in described if r[0] == "Statistics"], described


def test_spark_honours_a_broadcast_hint_on_a_view_alias(spark):
    spark.sql("DROP DATABASE IF EXISTS vws_hint CASCADE")
    spark.sql("CREATE DATABASE vws_hint")
    spark.sql("CREATE TABLE vws_hint.big USING parquet AS SELECT id AS k FROM range(200000)")
    spark.sql("CREATE TABLE vws_hint.other USING parquet AS SELECT id AS k FROM range(200000)")
    spark.sql("CREATE OR REPLACE VIEW vws_hint.v AS SELECT k FROM vws_hint.other WHERE k > 5")
    query = "SELECT /*+ BROADCAST(w) */ b.k FROM vws_hint.big AS b JOIN vws_hint.v AS w ON b.k = w.k"
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # only the hint can broadcast
    try:
        plan = spark.sql(f"EXPLAIN FORMATTED {query}").collect()[0][0]
        plain = spark.sql(f"EXPLAIN FORMATTED {query.replace('/*+ BROADCAST(w) */ ', '')}").collect()[0][0]
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)
    assert "BroadcastHashJoin" in plan and "BuildRight" in plan
    assert "BroadcastHashJoin" not in plain


def sampling_project(root):
    """A fact partitioned by day, a promotions source, and two staging views over the promotions:
    all of them, and a 5% sample by rand(). A mart joins the fact to each, for the last 20 days."""
    _write(
        root,
        {
            "dbt_project.yml": f"""
                name: views
                version: "1.0"
                config-version: 2
                profile: views
                on-run-start:
                  - "create database if not exists {SOURCE_DB}"
                  - "create table if not exists {SOURCE_DB}.events (event_id bigint, amount double, day int)
                     using parquet partitioned by (day)"
                  - "insert overwrite {SOURCE_DB}.events select id, cast(id % 97 as double), cast(id % 200 as int)
                     from range(40000)"
                  - "create table if not exists {SOURCE_DB}.promos using parquet as select cast(id % 200 as int)
                     as day, concat('promo ', cast(id as string)) as promo from range(20000)"
                models:
                  views:
                    staging:
                      +materialized: view
                    marts:
                      +materialized: table
                      # A fact of 40,000 rows standing for a big one: pruned from any size, and
                      # the promotions too big to broadcast.
                      +hiveopt: {{prune_min_big_bytes: 0, broadcast_threshold_bytes: 16384}}
                """,
            "models/staging/sources.yml": f"""
                version: 2
                sources:
                  - name: shop
                    schema: {SOURCE_DB}
                    tables: [{{name: events}}, {{name: promos}}]
                """,
            "models/staging/stg_promos.sql": "select day, promo from {{ source('shop', 'promos') }}\n",
            "models/staging/stg_sampled_promos.sql": (
                "select day, promo from {{ source('shop', 'promos') }} where rand() < 0.05\n"
            ),
            "models/marts/recent_promo_revenue.sql": """
                select p.promo, sum(e.amount) as revenue
                from {{ source('shop', 'events') }} e
                join {{ ref('stg_promos') }} p on e.day = p.day
                where p.day >= 180
                group by p.promo
                """,
            # By LIMIT: which rows pass the cut is up to the order they arrive in (on a cluster,
            # the order shuffle blocks are fetched in: another set from run to run).
            "models/staging/stg_first_promos.sql": (
                "select day, promo from {{ source('shop', 'promos') }} limit 19000\n"
            ),
            "models/marts/first_promo_revenue.sql": """
                select p.promo, sum(e.amount) as revenue
                from {{ source('shop', 'events') }} e
                join {{ ref('stg_first_promos') }} p on e.day = p.day
                where p.day >= 180
                group by p.promo
                """,
            "models/marts/sampled_promo_revenue.sql": """
                select p.promo, sum(e.amount) as revenue
                from {{ source('shop', 'events') }} e
                join {{ ref('stg_sampled_promos') }} p on e.day = p.day
                where p.day >= 180
                group by p.promo
                """,
        },
    )


def test_a_view_that_samples_with_rand_is_never_read_apart(spark, tmp_path):
    """Spark expands a view where it is read: a view with rand() in its definition draws other rows
    at each reference. Partition pruning fetches a small side's keys in a query of their own, and
    before this guard it fetched them from such a view too: the IN-list then came from another
    draw than the join's (on local Spark, a 10% sample kept 19-25 groups as written and 1-3 behind
    the IN-list). A view with a LIMIT is the same on a cluster: which rows pass the cut changes
    from run to run. Now the rules that read a relation apart, or a different number of times,
    skip a view whose definition is not deterministic and say so; over the same view without
    rand() or LIMIT the pruning fires, and its rows are the query's as written."""
    for db in (SOURCE_DB, "vws", "vws_stats"):
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
    sampling_project(tmp_path)
    profiles(tmp_path, "vws")
    events = Statements()
    # As in a cluster whose promotions are too big to broadcast: the join stays sort-merge, and
    # Spark's dynamic partition pruning (which needs a broadcast) does not prune the fact.
    result = dbt_broadcasting_under(spark, tmp_path, 16 * 1024, "run", events=events)
    assert result.success, [(r.node.name, r.status, r.message) for r in result.result.results]

    recent = record(tmp_path, "recent_promo_revenue")
    assert "prune_partitions_from_small_side" in recent["fired_rules"], recent["rules"]
    assert re.search(r"e\.day IN \(180, 181, .*199\)", recent["optimized_sql"]), recent["optimized_sql"]
    ours = Counter(tuple(r) for r in spark.sql("SELECT * FROM vws.recent_promo_revenue").collect())
    written = Counter(tuple(r) for r in spark.sql(recent["original_sql"]).collect())
    assert ours == written and len(ours) == 2000

    fetched = events.matching("fetched small-side keys")
    assert [m for m in fetched if "recent_promo_revenue" in m], events.messages
    for mart, view in (("sampled_promo_revenue", "stg_sampled_promos"), ("first_promo_revenue", "stg_first_promos")):
        drawn = record(tmp_path, mart)
        assert "prune_partitions_from_small_side" not in drawn["fired_rules"], mart
        decisions = [r["decisions"] for r in drawn["rules"] if r["rule"] == "prune_partitions_from_small_side"]
        reasons = [d["reason"] for d in sum(decisions, [])]
        assert any("the small side is not deterministic" in reason for reason in reasons), (mart, reasons)
        # Its keys were never fetched (the first mart's were).
        assert [m for m in fetched if mart in m] == [], fetched
        assert drawn["statistics_gathering"][f"vws.{view}"]["state"].startswith("view: estimated"), mart
