"""Decision records: what each rule did or declined to do, and why.

>>> d = Decision("select_join_algorithms", fired=False, reason="statistics absent for db.t")
>>> d.to_dict()["reason"]
'statistics absent for db.t'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Decision:
    rule: str
    fired: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "fired": self.fired, "reason": self.reason, **self.details}


@dataclass
class RuleRun:
    """One rule's pass over the query: its time and the decisions it recorded."""

    rule: str
    enabled: bool
    elapsed_ms: float = 0.0
    decisions: list[Decision] = field(default_factory=list)
    error: str | None = None
    # Values from outside the query (settings, statistics) the rule refused, each said once:
    # the adapter shows them as warnings naming the model.
    warnings: list[str] = field(default_factory=list)

    @property
    def fired(self) -> bool:
        """Whether the rule's rewrite is in the query: it recorded a fired decision and did not fail
        (a failed rule's rewrite is discarded, whatever it recorded)."""
        return self.error is None and any(d.fired for d in self.decisions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "enabled": self.enabled,
            "fired": self.fired,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "decisions": [d.to_dict() for d in self.decisions],
            **({"error": self.error} if self.error else {}),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }


@dataclass(frozen=True)
class Skip:
    """What an analysis returns when a candidate is not rewritten: the reason, recorded as a
    skipped decision (with details), unless `record` is False (the candidate was not one: nothing
    worth a line in the record). Analyses return a typed candidate or a Skip, never a bare string.

    >>> log = DecisionLog("r")
    >>> Skip("statistics absent for db.t", table="db.t").record_in(log, candidate="x")
    >>> log.decisions[0].to_dict()
    {'rule': 'r', 'fired': False, 'reason': 'statistics absent for db.t', 'table': 'db.t', 'candidate': 'x'}
    """

    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    record: bool = True

    def __init__(self, reason: str, record: bool = True, **details: Any):
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "details", details)
        object.__setattr__(self, "record", record)

    def about(self, subject: str) -> Skip:
        """The same Skip, its reason led by what it is about (a join, a key, a table)."""
        return Skip(f"{subject}: {self.reason}", self.record, **self.details)

    def record_in(self, log: DecisionLog, **details: Any) -> None:
        if self.record:
            log.skipped(self.reason, **{**self.details, **details})


class DecisionLog:
    """Handed to a rule; the rule records into it instead of returning side data."""

    def __init__(self, rule: str):
        self.rule = rule
        self.decisions: list[Decision] = []
        self.warnings: list[str] = []

    def fired(self, reason: str, **details: Any) -> None:
        self.decisions.append(Decision(self.rule, True, reason, details))

    def skipped(self, reason: str, **details: Any) -> None:
        self.decisions.append(Decision(self.rule, False, reason, details))

    def warn(self, message: str) -> None:
        """A value from a setting or the statistics was refused (once per message)."""
        if message not in self.warnings:
            self.warnings.append(message)
