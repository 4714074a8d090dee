"""The rule contract: what a rule is, what it is given, and how the pipeline holds it to it.

A rule is a function `rule(expression, <the arguments it names>) -> expression` over a copy of
the qualified query. It reports a change by recording a fired decision in its DecisionLog (the
role of DataFusion's `Transformed::yes`); the pipeline compares the tree it got back with the
tree it gave, and a rule whose report and tree disagree is treated as a failed rule. A failed
rule (an exception, a broken invariant, a disagreeing report) is skipped: its copy is discarded,
the other rules' results are kept, and one warning says so.

The arguments a rule may name (the pipeline passes only those it names, as sqlglot's
`optimize()` does): `schema`, `statistics`, `config`, `materialization`, `bucketing`,
`partitioning`, `fetched_values`, `log`, `estimator` (the query's estimator, over the rule's
copy: the only source of rows, widths and selectivities) and `cost_model` (the query's cost
model: the only source of costs). A rule computes neither rows nor costs itself.

>>> from sqlglot import parse_one
>>> def noop(expression, log):
...     return expression
>>> rule = Rule("noop", noop, why_here="an example")
>>> rule.arguments({"log": 1, "schema": 2})
{'log': 1}
>>> changed_tree(parse_one("SELECT a FROM t"), parse_one("SELECT a FROM t"))
False
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp


@dataclass(frozen=True)
class Rule:
    name: str
    function: Callable[..., exp.Expression]
    # Why the rule stands where it does in RULES (what must run before it, and after).
    why_here: str
    # Rules this one switches off for the rest of the query once it has fired, and why.
    excludes: tuple[str, ...] = ()
    # What the rule would fix from today's data (a join algorithm, hot keys, partition values):
    # such rules do not run on stored definitions (views), which Spark plans when they are read.
    chosen_from_todays_data: str | None = None
    # A pure pre-pass that says what the adapter should fetch before the rules run:
    # `prepass(expression, estimator, config, materialization, partitioning)` -> fetches
    # (partition pruning's small-side values). The adapter runs them; the rule reads the results.
    prepass: Callable[..., Sequence[Any]] | None = None
    # Named parts of the rule that can be switched on their own as `<rule>.<part>` (the shapes
    # of merge_sibling_aggregates); the rule reads its switches from `config`.
    parts: tuple[str, ...] = ()
    _parameters: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_parameters", frozenset(inspect.signature(self.function).parameters))

    @property
    def part_names(self) -> tuple[str, ...]:
        """The switch names of the rule's parts.

        >>> Rule("r", lambda expression: expression, why_here="", parts=("a", "b")).part_names
        ('r.a', 'r.b')
        """
        return tuple(f"{self.name}.{part}" for part in self.parts)

    def arguments(self, available: dict[str, Any]) -> dict[str, Any]:
        """Only the arguments the rule names."""
        return {name: value for name, value in available.items() if name in self._parameters}


def changed_tree(before: exp.Expression, after: exp.Expression) -> bool:
    """Whether a rule's tree differs from the one it was given (structural equality, hints and
    aliases included)."""
    return before is not after and before != after


class ContractError(Exception):
    """A rule's report disagrees with its tree."""


def check_report(name: str, fired: bool, before: exp.Expression, after: exp.Expression) -> None:
    changed = changed_tree(before, after)
    if changed and not fired:
        raise ContractError(f"{name} changed the query without recording a fired decision")
    if fired and not changed:
        raise ContractError(f"{name} recorded a fired decision but returned the query unchanged")
