"""Property test on Spark: for random small join graphs, every permutation of the written order
returns the same rows before and after the optimizer (join reordering and algorithm hints),
with NULL keys and duplicate keys in the data, and predicates written in ON or in WHERE."""

import itertools
import random
import re
from collections import Counter

import pytest
from helpers.results import rows_of

from dbt.adapters.hiveopt.optimizer import OptimizerContext, StatsCatalog, optimize

pytestmark = pytest.mark.spark

TABLES = 4
SEEDS = [11, 23, 37]
# Graphs where some written orders are worth reordering (estimated 1.7x or more, MIN_ESTIMATED_GAIN):
# on seeds 23 and 37 no order is (Spark's connected order is near the best), so the results test
# runs two more graphs on which the reorder fires.
REORDERED = [11, 7, 13]


@pytest.fixture(scope="module")
def rows(graph_tables):
    """Rows of a query, run once per text: the rewrites of many written orders are the same SQL
    (the best order, its hints), and the same text returns the same rows."""
    spark, seen = graph_tables[0], {}

    def of(sql):
        if sql not in seen:
            seen[sql] = Counter(rows_of(spark, sql))
        return seen[sql]

    return of


@pytest.fixture(scope="module")
def graph_tables(spark):
    rng = random.Random(5)
    spark.sql("CREATE DATABASE IF NOT EXISTS pg")
    for t in range(TABLES):
        rows = [
            (rng.choice([None, *range(6)]), rng.choice([None, *range(4)]), rng.randint(0, 9))
            for _ in range(30 + 10 * t)
        ]
        spark.createDataFrame(rows, "a INT, b INT, v INT").write.mode("overwrite").saveAsTable(f"pg.t{t}")
    schema = {"pg": {f"t{t}": {"a": "int", "b": "int", "v": "int"} for t in range(TABLES)}}
    # Statistics far from the data on purpose: sizes that make the written orders look bad.
    stats = StatsCatalog.from_dict(
        {
            f"pg.t{t}": {
                "row_count": 10 ** (9 - 2 * t),
                "columns": {
                    "a": {"ndv": 10 ** (8 - 2 * t), "null_count": 0},
                    "b": {"ndv": 10, "null_count": 0},
                    "v": {"ndv": 10, "null_count": 0, "min": 0, "max": 9},
                },
            }
            for t in range(TABLES)
        }
    )
    return spark, schema, stats


def random_graph(seed):
    rng = random.Random(seed)
    edges = []
    for t in range(1, TABLES):  # a spanning tree, then maybe a cycle
        edges.append((rng.randrange(t), t, rng.choice("ab"), rng.choice("ab")))
    if rng.random() < 0.7:
        edges.append((0, TABLES - 1, "b", "b"))
    filters = [f"t{rng.randrange(TABLES)}.v < {rng.randint(3, 8)}"]
    return edges, filters


def written(order, edges, filters, in_on, outer_at=None):
    """The join in this order: each predicate in the first ON where both sides are joined (or all
    in WHERE, comma-joined, when in_on is false)."""
    pending = [f"t{x}.{cx} = t{y}.{cy}" for x, y, cx, cy in edges]
    reads = [{x, y} for x, y, _, _ in edges]
    sql = f"SELECT t0.v AS v0, t{TABLES - 1}.a AS a_last, t1.b AS b1 FROM pg.t{order[0]} AS t{order[0]}"
    joined, where = {order[0]}, list(filters)
    for t in order[1:]:
        joined.add(t)
        on = [p for p, r in zip(pending, reads) if r <= joined and p not in where and not r <= joined - {t}]
        if outer_at is not None and len(joined) - 1 == outer_at and on:
            sql += f" {outer_at % 2 and 'LEFT' or 'RIGHT'} JOIN pg.t{t} AS t{t} ON " + " AND ".join(on)
        elif in_on and on:
            sql += f" JOIN pg.t{t} AS t{t} ON " + " AND ".join(on)
        else:
            sql += f", pg.t{t} AS t{t}" if not in_on else f" CROSS JOIN pg.t{t} AS t{t}"
            where += on
    return sql + (" WHERE " + " AND ".join(where) if where else "")


@pytest.mark.parametrize("seed", sorted(set(SEEDS + REORDERED)))
def test_every_written_order_keeps_its_results(graph_tables, rows, seed):
    spark, schema, stats = graph_tables
    edges, filters = random_graph(seed)
    expected = None
    fired = 0
    for i, order in enumerate(itertools.permutations(range(TABLES))):
        sql = written(order, edges, filters, in_on=i % 2 == 0)
        result = optimize(sql, OptimizerContext(schema=schema, statistics=stats))
        assert result.fallback_reason is None, (sql, result.fallback_reason)
        fired += "reorder_joins" in result.fired_rules
        original = rows(sql)
        expected = expected or original
        assert original == expected and sum(original.values()) > 0  # the permutations agree, on rows
        assert rows(result.sql) == original, (sql, result.sql)
    if seed in REORDERED:
        assert fired > 0  # the statistics make some written orders worth reordering


@pytest.mark.parametrize("seed", SEEDS[:1])
def test_outer_joins_inside_the_order_keep_their_meaning(graph_tables, rows, seed):
    """A LEFT or RIGHT join in the middle: the runs around it are reordered on their own."""
    spark, schema, stats = graph_tables
    edges, filters = random_graph(seed)
    for order in itertools.permutations(range(TABLES)):
        for outer_at in (1, 2):
            sql = written(order, edges, [], in_on=True, outer_at=outer_at)
            result = optimize(sql, OptimizerContext(schema=schema, statistics=stats))
            assert result.fallback_reason is None, (sql, result.fallback_reason)
            assert rows(result.sql) == rows(sql), (sql, result.sql)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_written_order_is_costed_as_spark_runs_it(graph_tables, seed):
    """reorder_joins weighs its best order against the written one as Spark's ReorderJoin runs it
    (the next relation a condition connects, not a cross product): the order of the tables in
    Spark's optimized plan, for every permutation, comma-joined or written with ON."""
    spark, schema, stats = graph_tables
    edges, filters = random_graph(seed)
    differs = hinted = 0
    for i, order in enumerate(itertools.permutations(range(TABLES))):
        sql = written(order, edges, filters, in_on=i % 2 == 0)
        result = optimize(sql, OptimizerContext(schema=schema, statistics=stats))
        decisions = [d for r in result.rules if r.rule == "reorder_joins" for d in r.decisions]
        (decision,) = [d for d in decisions if "written_tree" in d.details]
        ours = re.findall(r"t\d", decision.details["written_tree"])
        plan = spark.sql(sql)._jdf.queryExecution().optimizedPlan().toString()
        theirs = re.findall(r"Relation spark_catalog\.pg\.(t\d)\b", plan)
        assert ours == theirs, (sql, decision.details["written_tree"], plan)
        differs += ours != [f"t{t}" for t in order]
        # Whatever the rules wrote (a new order, hints), Spark's plan of it has no cross product
        # where Spark's plan of the written query has none: a hint stops Spark's ReorderJoin.
        rewritten = spark.sql(result.sql)._jdf.queryExecution().optimizedPlan().toString()
        assert _cross_joins(rewritten) <= _cross_joins(plan), (sql, result.sql, rewritten)
        hinted += "/*+" in result.sql
    assert differs > 0  # some written orders are not the order Spark runs
    assert hinted > 0  # and some got hints


def _cross_joins(plan: str) -> int:
    """Joins without a condition in a plan's text: `Join Cross`, or `Join Inner` with nothing after."""
    return len(re.findall(r"Join (?:Cross|Inner)(?:, (?:left|right)Hint=[^\n]*)?\s*$", plan, flags=re.M))
