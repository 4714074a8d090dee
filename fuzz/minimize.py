"""Shrinking a failing case to a small repro, within a bounded number of attempts.

While the failure persists (the same outcome kind: a mismatch stays a mismatch, an optimized-only
error stays one), the minimizer resets config keys to their defaults, drops statistics (tables,
columns, then fields and heavy-hitter entries), sets the materialization, ANSI mode and fetch
behaviour and Spark settings to the plain ones, and shrinks the SQL with sqlglot: drops WHERE / ON / HAVING
conjuncts, select items, joins, ORDER BY / LIMIT, DISTINCT, hints, unused CTEs, one side of a
UNION ALL. Every attempt reruns the whole case (optimizer and Spark); an attempt whose original
query fails is simply not kept.

`report(outcome)` prints the repro: SQL, optimized SQL, statistics JSON, config JSON,
materialization, ANSI mode, fetched values and up to 10 differing rows.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp

from fuzz.queries import Query
from fuzz.runner import Case, Outcome, Runner

MAX_ATTEMPTS = 300
MAX_SECONDS = 240.0


class Minimizer:
    def __init__(self, runner: Runner, max_attempts: int = MAX_ATTEMPTS, max_seconds: float = MAX_SECONDS):
        self.runner = runner
        self.max_attempts, self.max_seconds = max_attempts, max_seconds
        self.attempts = 0
        self.started = 0.0

    def _budget(self) -> bool:
        return self.attempts < self.max_attempts and time.perf_counter() - self.started < self.max_seconds

    def _check(self, case: Case, kind: str, best: Outcome) -> Outcome | None:
        """The outcome when `case` still fails the same way, else None (one attempt). A candidate
        that differs from the best case only in statistics or config and gets the same optimized
        SQL fails the same way for sure: it is kept without running the queries again (counted
        as an attempt all the same)."""
        self.attempts += 1
        if (
            kind in ("mismatch", "optimized_error", "optimized_timeout")
            and best.optimized_sql
            and case.query.sql == best.case.query.sql
            and case.spark_settings() == best.case.spark_settings()
        ):
            try:
                result = self.runner.optimize_only(case)
            except Exception:
                result = None
            if result is not None and result.changed and result.sql == best.optimized_sql:
                return replace(best, case=case, fired=result.fired_rules)
            if result is not None and not result.changed:
                return None
        try:
            outcome = self.runner.run_case(case)
        except Exception:
            return None
        return outcome if outcome.kind == kind else None

    def _shrink(self, kind: str, best: Outcome, candidates: Callable[[Case], Iterator[Case]]) -> Outcome:
        """Try each candidate of the current case in turn; keep the first that still fails and
        start over from it, until none does or the budget is spent."""
        progress = True
        while progress and self._budget():
            progress = False
            for candidate in candidates(best.case):
                if not self._budget():
                    break
                found = self._check(candidate, kind, best)
                if found is not None:
                    best, progress = found, True
                    break
        return best

    def minimize(self, outcome: Outcome) -> Outcome:
        self.started, self.attempts = time.perf_counter(), 0
        kind = outcome.kind
        best = outcome
        # Coarse steps first (whole config keys, whole tables of statistics), then the SQL, then
        # the fine steps (columns, fields, heavy-hitter entries) on what is left.
        for candidates in (
            _flag_candidates,
            _config_candidates,
            _table_candidates,
            _sql_candidates,
            _table_candidates,
            _stats_candidates,
            _config_candidates,
        ):
            best = self._shrink(kind, best, candidates)
        if best is not outcome:  # the repro's own run: its decisions, rows and error as printed
            final = self.runner.run_case(best.case)
            best = final if final.kind == kind else best
        return best


# -- candidates -----------------------------------------------------------------------------------
def _with(case: Case, **changes) -> Case:
    return replace(case, **changes)


def _flag_candidates(case: Case) -> Iterator[Case]:
    if case.materialization != "table":
        yield _with(case, materialization="table")
    if case.fetch_mode != "fetch":
        yield _with(case, fetch_mode="fetch")
    if not case.ansi:
        yield _with(case, ansi=True)
    if not case.adaptive:
        yield _with(case, adaptive=True)
    if case.shuffle_partitions != 4:
        yield _with(case, shuffle_partitions=4)


def _merged_config(case: Case) -> dict[str, Any]:
    merged = {**case.profile, **case.model}
    rules = {**(case.profile.get("rules") or {}), **(case.model.get("rules") or {})}
    if rules:
        merged["rules"] = rules
    return merged


def _config_candidates(case: Case) -> Iterator[Case]:
    merged = _merged_config(case)
    if case.profile:
        yield _with(case, profile={}, model=merged)
    for key in list(merged):
        yield _with(case, profile={}, model={k: v for k, v in merged.items() if k != key})
    for key in ("rules", "skewed_keys", "sorted_keys"):
        value = merged.get(key)
        if not isinstance(value, dict):
            continue
        for name in list(value):
            smaller = {k: v for k, v in value.items() if k != name}
            yield _with(case, profile={}, model={**merged, key: smaller})
            inner = value[name]
            if isinstance(inner, dict):
                for column in list(inner):
                    yield _with(
                        case,
                        profile={},
                        model={**merged, key: {**value, name: {c: v for c, v in inner.items() if c != column}}},
                    )
                    values = inner[column]
                    if isinstance(values, list) and len(values) > 1:
                        for i in range(len(values)):
                            fewer = values[:i] + values[i + 1 :]
                            yield _with(
                                case, profile={}, model={**merged, key: {**value, name: {**inner, column: fewer}}}
                            )
            elif isinstance(inner, list) and len(inner) > 1:
                for i in range(len(inner)):
                    yield _with(case, profile={}, model={**merged, key: {**value, name: inner[:i] + inner[i + 1 :]}})


def _tables_in(sql: str) -> set | None:
    try:
        return {
            ".".join(p for p in (t.db, t.name) if p).lower()
            for t in sqlglot.parse_one(sql, read="spark").find_all(exp.Table)
        }
    except Exception:
        return None


def _table_candidates(case: Case) -> Iterator[Case]:
    """Statistics without the tables the query does not read, or without one table."""
    stats = case.stats
    used = _tables_in(case.query.sql)
    if used is not None:
        unused = [name for name in stats if name.lower() not in used]
        if unused:
            yield _with(case, stats={k: v for k, v in stats.items() if k not in unused})
    for name in list(stats):
        yield _with(case, stats={k: v for k, v in stats.items() if k != name})


def _stats_candidates(case: Case) -> Iterator[Case]:
    """Statistics without one field of a table, all its columns, one column, one field of a
    column, or one heavy-hitter or histogram entry."""
    stats = case.stats
    for name, table in stats.items():
        if isinstance(table, dict) and table.get("columns"):
            smaller = copy.deepcopy(stats)
            smaller[name]["columns"] = {}
            yield _with(case, stats=smaller)
    for name, table in stats.items():
        if not isinstance(table, dict):
            continue
        for field in [f for f in table if f != "columns"]:
            smaller = copy.deepcopy(stats)
            del smaller[name][field]
            yield _with(case, stats=smaller)
        for column in list(table.get("columns") or {}):
            smaller = copy.deepcopy(stats)
            del smaller[name]["columns"][column]
            yield _with(case, stats=smaller)
        for column, col_stats in (table.get("columns") or {}).items():
            for field in list(col_stats or {}):
                smaller = copy.deepcopy(stats)
                del smaller[name]["columns"][column][field]
                yield _with(case, stats=smaller)
            for field in ("heavy_hitters", "histogram"):
                entries = (col_stats or {}).get(field)
                if isinstance(entries, list) and len(entries) > 1:
                    for i in range(len(entries)):
                        smaller = copy.deepcopy(stats)
                        smaller[name]["columns"][column][field] = entries[:i] + entries[i + 1 :]
                        yield _with(case, stats=smaller)


def _sql_variants(sql: str) -> Iterator[str]:
    """Smaller versions of the query, one edit each."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except Exception:
        return
    edits = _edits(tree)
    for i in range(len(edits)):
        copy_tree = tree.copy()
        try:
            _edits(copy_tree)[i]()
            text = copy_tree.sql("spark")
        except Exception:
            continue
        if text != sql:
            yield text


def _edits(tree: exp.Expression) -> list[Callable[[], None]]:
    """Closures that each apply one shrinking edit to `tree` (same order for equal trees)."""
    edits: list[Callable[[], None]] = []
    for node in list(tree.walk()):
        if isinstance(node, exp.Union):
            edits.append(lambda n=node: n.replace(n.left))
            edits.append(lambda n=node: n.replace(n.right))
        if isinstance(node, exp.Select):
            if len(node.expressions) > 1:
                for i in range(len(node.expressions)):
                    edits.append(lambda n=node, i=i: n.set("expressions", n.expressions[:i] + n.expressions[i + 1 :]))
            for i, _join in enumerate(node.args.get("joins") or []):
                edits.append(
                    lambda n=node, i=i: n.set("joins", (n.args["joins"][:i] + n.args["joins"][i + 1 :]) or None)
                )
            for arg in ("order", "limit", "distinct", "hint", "having", "where"):
                if node.args.get(arg):
                    edits.append(lambda n=node, a=arg: n.set(a, None))
        if isinstance(node, exp.With):
            for i in range(len(node.expressions)):
                edits.append(lambda n=node, i=i: n.set("expressions", n.expressions[:i] + n.expressions[i + 1 :]))
        if isinstance(node, exp.And):
            edits.append(lambda n=node: n.replace(n.left))
            edits.append(lambda n=node: n.replace(n.right))
        if isinstance(node, exp.Or):
            edits.append(lambda n=node: n.replace(n.left))
        if isinstance(node, exp.Join) and node.args.get("on") is not None and node.side:
            edits.append(lambda n=node: n.set("side", None))
    return edits


def _sql_candidates(case: Case) -> Iterator[Case]:
    for text in _sql_variants(case.query.sql):
        yield _with(case, query=Query(text, case.query.shape, case.query.deterministic))


# -- the report -----------------------------------------------------------------------------------
def record(outcome: Outcome, original: Outcome | None = None, attempts: int = 0) -> dict[str, Any]:
    case = outcome.case
    out: dict[str, Any] = {
        "kind": outcome.kind,
        "error": outcome.error,
        "detail": outcome.detail,
        "case": case.to_dict(),
        "config": _merged_config(case),
        "optimized_sql": outcome.optimized_sql,
        "fired_rules": outcome.fired,
        "decisions": outcome.decisions,
        "fetched_values": outcome.fetched,
        "minimize_attempts": attempts,
    }
    if outcome.diff is not None:
        out["only_in_original"] = [list(r) for r in outcome.diff.only_original[:10]]
        out["only_in_optimized"] = [list(r) for r in outcome.diff.only_optimized[:10]]
    if original is not None and original is not outcome:
        out["unminimized"] = {
            "sql": original.case.query.sql,
            "optimized_sql": original.optimized_sql,
            "statistics": original.case.stats,
            "profile": original.case.profile,
            "model": original.case.model,
            "detail": original.detail,
            "error": original.error,
        }
    return out


def report(outcome: Outcome, attempts: int = 0) -> str:
    case = outcome.case
    lines = [
        "=" * 100,
        f"{outcome.kind.upper()}: seed {case.seed} case {case.index} ({case.query.shape}); rules fired: "
        f"{', '.join(outcome.fired) or '-'}; minimized in {attempts} attempts",
    ]
    if outcome.error:
        lines.append(f"error: {outcome.error}")
    if outcome.detail and outcome.kind == "mismatch":
        lines.append(f"differs: {outcome.detail}")
    lines += ["-- SQL", case.query.sql, "-- optimized SQL", str(outcome.optimized_sql)]
    lines += ["-- statistics", json.dumps(case.stats, default=str, ensure_ascii=False)]
    lines += ["-- config", json.dumps(_merged_config(case), default=str, ensure_ascii=False)]
    settings = "; ".join(f"{k}={v}" for k, v in case.spark_settings().items())
    lines.append(f"-- materialization: {case.materialization}; fetch: {case.fetch_mode}; {settings}")
    if outcome.fetched:
        lines.append("-- fetched values: " + json.dumps(outcome.fetched, default=str, ensure_ascii=False))
    if outcome.diff is not None and not outcome.diff.equal:
        lines.append("-- rows only in the original (up to 10):")
        lines += [f"   {r!r}" for r in outcome.diff.only_original[:10]]
        lines.append("-- rows only in the optimized result (up to 10):")
        lines += [f"   {r!r}" for r in outcome.diff.only_optimized[:10]]
    if outcome.kind == "optimizer_raised" and outcome.detail:
        lines += ["-- traceback", outcome.detail.rstrip()]
    return "\n".join(lines)
