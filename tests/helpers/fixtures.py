"""Optimizer fixtures in sqlglot's style: one file per rule under tests/fixtures/optimizer/.

A case is a block of `# key: value` lines, then the input SQL ending in `;`, then optionally the
expected SQL ending in `;` (each may span lines; a statement ends with `;` at the end of a line, and
no blank line may appear inside a case: cases are separated by blank lines). No expected SQL means
the rule must not fire. `# title:` is short (the shape and the outcome; it is the pytest id) and
`# why:` explains it. `# stats: NAME` picks a schema and statistics set from statistics.json (a
set's optional "partitioning" gives partition columns, its optional "config" settings for every
case of the set); `# config: {...}` (JSON) sets optimizer settings; `# execute: false` keeps a case
off Spark; `# materialization: view` builds a view; `# values: JSON` is what the adapter's pre-pass
fetched for every small side the query has (a list of keys, or {"low": .., "high": ..}, or
{"error": ".."}; or by small-side alias: {"d": [1, 2], "r": ["x"]}); `# volatile: ["db.v"]` names
relations to treat as views with a non-deterministic definition (OptimizerContext.volatile_relations).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "optimizer")


@dataclass
class Case:
    rule: str
    title: str
    sql: str
    expected: str | None
    stats: str
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def executable(self) -> bool:
        return self.meta.get("execute", "true").lower() != "false"

    def __str__(self) -> str:
        return f"{self.rule}: {self.title}"


def load_sets() -> dict[str, dict]:
    with open(os.path.join(FIXTURES, "statistics.json")) as handle:
        return json.load(handle)


def load_cases(rule: str) -> list[Case]:
    with open(os.path.join(FIXTURES, f"{rule}.sql")) as handle:
        text = handle.read()
    cases = []
    for block in [b for b in text.split("\n\n") if b.strip()]:
        meta: dict[str, str] = {}
        body: list[str] = []
        for line in block.strip().splitlines():
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
            else:
                body.append(line)
        statements = [s.strip() for s in "\n".join(body).split(";\n") if s.strip()]
        statements = [s[:-1] if s.endswith(";") else s for s in statements]
        cases.append(
            Case(
                rule,
                meta.get("title", ""),
                statements[0],
                statements[1] if len(statements) > 1 else None,
                meta.get("stats", ""),
                meta,
            )
        )
    return cases


def context_for(
    case: Case, only_rule: str | None = None, rule_off: str | None = None, volatile=None, **settings
) -> OptimizerContext:
    """`only_rule`: that rule alone is on (a name no rule has: every rule off). `rule_off`: that rule
    switched off as a profile's text would say it ("false"), the others as `only_rule` leaves them.
    `volatile`: the relations to treat as non-deterministic views (else the case's `# volatile:`)."""
    sets = load_sets()[case.stats]
    from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES

    rules: dict[str, bool | str] = {name: (only_rule is None or name == only_rule) for name in RULE_NAMES}
    if rule_off is not None:
        rules[rule_off] = "false"
    configured = {**sets.get("config", {}), **(json.loads(case.meta["config"]) if case.meta.get("config") else {})}
    context = OptimizerContext(
        schema=sets["schema"],
        statistics=StatsCatalog.from_dict(sets["statistics"]),
        # The case's settings as a model's: a bad entry is ignored (and listed in problems), not an error.
        config=OptimizerConfig.from_dicts({"rules": rules, **settings}, configured),
        model=case.title,
        materialization=case.meta.get("materialization", "table"),
        partitioning=sets.get("partitioning", {}),
        volatile_relations=frozenset(volatile if volatile is not None else json.loads(case.meta.get("volatile", "[]"))),
    )
    if "values" in case.meta:
        context.fetched_values = fetched_for(case.sql, context, json.loads(case.meta["values"]))
    return context


def fetched_for(sql: str, context: OptimizerContext, answer) -> dict:
    """What the adapter's pre-pass would hand the rules if every small side returned `answer`."""
    from dbt.adapters.hiveopt.optimizer.context import FetchedValues
    from dbt.adapters.hiveopt.optimizer.pipeline import value_fetches
    from dbt.adapters.hiveopt.optimizer.prepare import prepare_query

    expression = prepare_query(sql, context.schema, context.default_db).expression
    fetches = value_fetches(
        expression,
        context.schema,
        context.statistics,
        context.config,
        context.materialization,
        context.partitioning,
        context.volatile_relations,
    )

    def fetched(answer) -> FetchedValues:
        return FetchedValues(values=answer) if isinstance(answer, list) else FetchedValues(**answer)

    if isinstance(answer, dict) and not set(answer) & {"low", "high", "error"}:
        return {fetch.key: fetched(answer[fetch.small]) for fetch in fetches if fetch.small in answer}
    return {fetch.key: fetched(answer) for fetch in fetches}
