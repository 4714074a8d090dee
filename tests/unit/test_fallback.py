"""Broken and exotic SQL: the optimizer returns the original SQL and says why."""

import pytest
from sqlglot import exp

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES
from dbt.adapters.hiveopt.optimizer.prepare import UnsupportedQuery, output_names, parse_query, prepare_query

SCHEMA = {"db": {"t": {"k": "int", "Name": "string"}, "u": {"k": "int"}, "v": {"k": "int", "j": "int"}}}
STATS = StatsCatalog.from_dict({"db.t": {"row_count": 10**8}, "db.u": {"row_count": 10}})


def run(sql, **config):
    return optimize(sql, OptimizerContext(schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts(config)))


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("SELEC k FROM db.t", "cannot parse"),
        ("SELECT k FROM db.t; SELECT k FROM db.u", "expected one statement"),
        ("INSERT INTO db.t SELECT * FROM db.u", "not a query"),
        ("SELECT k FROM db.missing", "no schema for db.missing"),
        ("SELECT nope FROM db.t", "cannot qualify"),
        ("SELECT k + 1 FROM db.t", "without an alias"),
        ("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k", None),
        # Found by the fuzzer: sqlglot reads `name.k` as a field of column `name` when `name` aliases a
        # SEMI or ANTI joined table that has a column of that name.
        ("SELECT t.k FROM db.t ANTI JOIN db.v AS j ON t.k = j.k", "a column read as a field"),
    ],
)
def test_fallback_reasons(sql, reason):
    result = run(sql)
    if reason is None:
        assert result.fallback_reason is None
    else:
        assert reason in result.fallback_reason
        assert result.sql == sql and not result.changed


def test_switched_off():
    result = run("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k", enabled=False)
    assert result.fallback_reason == "optimizer switched off" and result.switched_off and not result.changed
    result = run("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k", rules={name: False for name in RULE_NAMES})
    assert result.fallback_reason == "every rule switched off" and result.switched_off


JOIN = "SELECT t.k FROM db.t JOIN db.u ON t.k = u.k"


def _rules(monkeypatch, *functions):
    from dbt.adapters.hiveopt.optimizer import pipeline
    from dbt.adapters.hiveopt.optimizer.rule import Rule

    names = ("merge_sibling_aggregates", "select_join_algorithms")
    monkeypatch.setattr(pipeline, "RULES", tuple(Rule(n, f, why_here="test") for n, f in zip(names, functions)))


def _hint(expression, log):
    expression.set("hint", exp.Hint(expressions=[exp.Anonymous(this="BROADCAST", expressions=[exp.column("u")])]))
    log.fired("hinted")
    return expression


def test_a_failing_rule_is_skipped_and_the_others_kept(monkeypatch):
    def broken(expression, log):
        log.fired("about to break")
        raise RuntimeError("boom")

    _rules(monkeypatch, broken, _hint)
    result = run(JOIN)
    assert result.fallback_reason is None and result.changed and "BROADCAST(u)" in result.sql
    failed, hinted = result.rules
    assert failed.error == "RuntimeError: boom" and not failed.fired and hinted.fired
    assert result.fired_rules == ["select_join_algorithms"]
    assert result.warnings == [
        "rule merge_sibling_aggregates failed (RuntimeError: boom): its rewrite is skipped, the other rules' kept"
    ]


def test_a_rule_that_changes_the_tree_without_saying_so_is_skipped(monkeypatch):
    def silent(expression, log):
        expression.set("where", exp.condition("t.k > 1"))
        return expression

    def claims(expression, log):
        log.fired("claims a change it did not make")
        return expression

    _rules(monkeypatch, silent, claims)
    result = run(JOIN)
    assert not result.changed and result.sql == JOIN and result.fired_rules == []
    assert [r.error for r in result.rules] == [
        "ContractError: merge_sibling_aggregates changed the query without recording a fired decision",
        "ContractError: select_join_algorithms recorded a fired decision but returned the query unchanged",
    ]


def test_a_rule_that_changes_output_columns_is_caught(monkeypatch):
    def renames(expression, log):
        expression.selects[0].set("alias", exp.to_identifier("other"))
        log.fired("renamed")
        return expression

    _rules(monkeypatch, renames, _hint)
    result = run(JOIN)
    (renamed, hinted) = result.rules
    assert "output columns changed" in renamed.error and hinted.fired
    assert "BROADCAST(u)" in result.sql and "other" not in result.sql


@pytest.mark.parametrize(
    "sql, names",
    [
        ("SELECT k AS MyKey, name FROM db.t", ["MyKey", "Name"]),
        ("SELECT * FROM db.t", ["k", "Name"]),
        ("SELECT `Odd Name` FROM (SELECT k AS `Odd Name` FROM db.t) x", ["Odd Name"]),
        ("SELECT k FROM db.t UNION ALL SELECT k FROM db.u", ["k"]),
    ],
)
def test_output_names_keep_their_case(sql, names):
    assert prepare_query(sql, SCHEMA).output_names == names


@pytest.mark.parametrize(
    "sql, spark_names, names",
    [
        # Spark names an expression without an alias after its text: given that name, the rewrite keeps it.
        ("SELECT t.k, COUNT(*) FROM db.t JOIN db.u ON t.k = u.k GROUP BY t.k", ["k", "count(1)"], ["k", "count(1)"]),
        ("SELECT (k + 1) FROM db.t UNION ALL SELECT k FROM db.u", ["(k + 1)"], ["(k + 1)"]),
        ("SELECT k AS MyKey, SUM(k) FROM db.t", ["MyKey", "sum(k)"], ["MyKey", "sum(k)"]),
    ],
)
def test_unaliased_outputs_take_the_names_spark_gives_them(sql, spark_names, names):
    prepared = prepare_query(sql, SCHEMA, spark_output_names=spark_names)
    assert prepared.output_names == names
    context = OptimizerContext(schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts({}))
    result = optimize(sql, context, prepared)
    assert result.fallback_reason is None


@pytest.mark.parametrize(
    "sql, spark_names",
    [
        ("SELECT k + 1 FROM db.t", None),  # Spark not asked (or it could not say)
        ("SELECT k, k + 1 FROM db.t", ["k"]),  # the names do not line up with the output
        ("SELECT *, k + 1 FROM db.t", ["k", "Name", "(k + 1)"]),  # a star is several columns
    ],
)
def test_unaliased_outputs_without_names_run_as_written(sql, spark_names):
    with pytest.raises(UnsupportedQuery, match="without an alias"):
        prepare_query(sql, SCHEMA, spark_output_names=spark_names)


def test_a_rewrite_of_an_unaliased_output_builds_the_same_columns():
    sql = "SELECT COUNT(*) FROM db.t JOIN db.u ON t.k = u.k"
    context = OptimizerContext(schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts({}))
    result = optimize(sql, context, prepare_query(sql, SCHEMA, spark_output_names=["count(1)"]))
    assert result.changed and "BROADCAST(u)" in result.sql
    assert output_names(parse_query(result.sql)) == ["count(1)"]


class SparkNames:
    """The adapter's DESCRIBE QUERY, counted: Spark's names for the query's outputs."""

    def __init__(self, names):
        self.names, self.asked = names, 0

    def __call__(self):
        self.asked += 1
        return self.names


def named_later(sql, names, **config):
    """optimize() as the adapter calls it: Spark is asked for output names only if a rule rewrites."""
    ask = SparkNames(names)
    context = OptimizerContext(
        schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts(config), spark_output_names=ask
    )
    return optimize(sql, context, prepare_query(sql, SCHEMA, names_later=True)), ask


def test_spark_names_an_unaliased_output_only_when_a_rule_rewrites_the_query():
    sql = "SELECT COUNT(*) FROM db.t JOIN db.u ON t.k = u.k"
    result, ask = named_later(sql, ["count(1)"])
    assert ask.asked == 1 and result.changed and "BROADCAST(u)" in result.sql
    assert output_names(parse_query(result.sql)) == ["count(1)"]
    assert "_hiveopt_output" not in result.sql
    # Nothing rewritten: Spark is not asked, and runs the text as written (no DESCRIBE QUERY paid).
    result, ask = named_later(sql, ["count(1)"], rules={"select_join_algorithms": False})
    assert ask.asked == 0 and not result.changed and result.fallback_reason is None and result.sql == sql


@pytest.mark.parametrize("names", [None, ["count(1)", "extra"]])
def test_a_rewrite_without_spark_names_for_its_outputs_runs_as_written(names):
    sql = "SELECT COUNT(*) FROM db.t JOIN db.u ON t.k = u.k"
    result, ask = named_later(sql, names)
    assert ask.asked == 1 and not result.changed and result.sql == sql
    assert "without an alias" in result.fallback_reason


def test_names_later_still_refuses_a_star_beside_an_unaliased_output():
    with pytest.raises(UnsupportedQuery, match="without an alias"):
        prepare_query("SELECT *, k + 1 FROM db.t", SCHEMA, names_later=True)


def test_names_later_is_not_used_where_the_query_has_placeholder_like_names():
    # Renaming the placeholders would rename the query's own `_hiveopt_output_0` too.
    with pytest.raises(UnsupportedQuery, match="without an alias"):
        prepare_query("SELECT k + 1 FROM (SELECT k AS _hiveopt_output_0, k FROM db.t) AS t", SCHEMA, names_later=True)


def test_an_unaliased_scalar_subquery_keeps_its_name_when_siblings_merge():
    # Fuzzer, seed 7, cases 735 and 801: Spark names both unaliased subqueries `scalarsubquery()`;
    # merging the siblings into one cross-joined pass renamed one of them `_hiveopt_2`.
    schema = {"db": {"f": {"id": "int", "v": "double"}, "d": {"g": "int"}}}
    stats = StatsCatalog.from_dict(
        {"db.f": {"row_count": 100_000}, "db.d": {"row_count": 10, "columns": {"g": {"ndv": 5, "min": 0, "max": 9}}}}
    )
    sql = (
        "SELECT (SELECT AVG(id) FROM db.f WHERE v > 1) AS c, (SELECT COUNT(DISTINCT id) FROM db.f WHERE v > 2), "
        "(SELECT SUM(id) FROM db.f WHERE v > 3) FROM db.d AS r WHERE r.g IN (0, 1)"
    )
    names = ["c", "scalarsubquery()", "scalarsubquery()"]
    context = OptimizerContext(schema=schema, statistics=stats, config=OptimizerConfig.from_dicts({}))
    result = optimize(sql, context, prepare_query(sql, schema, spark_output_names=names))
    assert [r.error for r in result.rules if r.error] == []
    assert result.fired_rules == ["merge_sibling_aggregates"]
    assert output_names(parse_query(result.sql)) == names


def test_distinct_order_by_guard():
    # TPC-DS q41's shape: ORDER BY must name the DISTINCT output, not the qualified column.
    q = prepare_query("SELECT DISTINCT (name) FROM db.t ORDER BY name LIMIT 10", SCHEMA).expression
    key = q.args["order"].expressions[0].this
    assert key.name.lower() == "name" and not key.table


def test_nondeterministic_aliases_are_never_duplicated():
    # Expanding `GROUP BY r` into `GROUP BY rand()` would draw a second random number: the alias
    # is kept, and as sqlglot cannot resolve it then, the query runs as written.
    result = run("SELECT rand() AS r, COUNT(*) AS c FROM db.t JOIN db.u ON t.k = u.k GROUP BY r")
    assert result.sql.upper().count("RAND()") == 1


def test_a_query_prepared_by_the_caller_is_used_as_is_and_left_unchanged():
    """The adapter prepares the query once (for the statistics' key columns) and hands it over."""
    sql = "SELECT t.k, u.k AS uk FROM db.t JOIN db.u ON t.k = u.k"
    prepared = prepare_query(sql, SCHEMA)
    before = prepared.expression.sql("spark")
    context = OptimizerContext(schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts({}))
    handed = optimize(sql, context, prepared)
    assert handed.changed and handed.sql == optimize(sql, context).sql
    assert prepared.expression.sql("spark") == before  # the rules worked on copies
