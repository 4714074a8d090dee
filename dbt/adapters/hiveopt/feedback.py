"""A memory of what each model's rewrite gained (Oracle's SQL plan management, DB2's LEO, Bao):
dbt models are rebuilt day after day, so each model is its own benchmark. A build records how
long the model took, which SQL ran (the original or the optimized one, by the rewrite's
fingerprint) and how big its inputs were. With `feedback: explore` (the default) a rewrite with no
measured outcome runs optimized once and as written once, on consecutive builds; from then on
the faster one runs, the optimized SQL only when it was faster by more than a margin, until the
rewrite changes or the inputs change size by more than `RESIZE_FACTOR` (then both are measured
again): the builds that run the kept variant are not stored (BuildRecords.outcome). `feedback: off`
always runs the optimized SQL. Outcomes live in the statistics store (one row per model and
variant), so they are shared and safe under threads and between processes as statistics are.

Pure: no I/O. The adapter reads the outcomes, asks `choose`, runs the SQL it says, and records
the build's time with `outcome_row`.

>>> rewrite = rewrite_fingerprint("select 1", "SELECT /*+ BROADCAST(d) */ 1")
>>> first = choose(rewrite, 100.0, {})
>>> first.variant, first.explore, first.why
('optimized', True, 'first build of this rewrite: optimized, to be compared with the original on the next build')
>>> measured = {"optimized": Outcome("optimized", rewrite, 7.9, 100.0, "2026-11-20T06:00:00")}
>>> choose(rewrite, 100.0, measured).why
'exploring: the original this build, to compare with the optimized build of 2026-11-20 (7.9 s)'
>>> measured["original"] = Outcome("original", rewrite, 4.9, 100.0, "2026-11-21T06:00:00")
>>> choose(rewrite, 120.0, measured).why
'kept original: optimized 7.9 s vs original 4.9 s on 2026-11-21'
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

# The optimized SQL is kept only when it built this much faster than the original: a rewrite
# that is not clearly faster is not worth its risk (and one build each is a noisy measure).
MARGIN = 0.05
# Outcomes measured on inputs this many times smaller or bigger than today's are measured again.
RESIZE_FACTOR = 2.0
# The statistics store's row name for an outcome: `outcome:<model>:<variant>`.
PREFIX = "outcome:"
VARIANTS = ("optimized", "original")


def rewrite_fingerprint(original_sql: str, optimized_sql: str) -> str:
    """Which rewrite of which model SQL: a new decision (or new SQL) is a new rewrite to measure."""
    text = "\n".join(" ".join(sql.split()) for sql in (original_sql, optimized_sql))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Outcome:
    variant: str  # "optimized" or "original"
    rewrite: str  # rewrite_fingerprint of the build
    seconds: float  # the build's time
    input_bytes: float | None  # the size on disk of what the model read
    built_at: str  # ISO time of the build

    @classmethod
    def from_payload(cls, payload: str) -> Outcome | None:
        try:
            data = json.loads(payload)
            outcome = cls(
                str(data["variant"]),
                str(data["rewrite"]),
                float(data["seconds"]),
                None if data.get("input_bytes") is None else float(data["input_bytes"]),
                str(data["built_at"]),
            )
        except (ValueError, TypeError, KeyError):
            return None
        return outcome if outcome.variant in VARIANTS and outcome.seconds >= 0 else None

    def payload(self) -> str:
        return json.dumps(asdict(self))


@dataclass(frozen=True)
class Choice:
    variant: str  # the SQL to run: "optimized" or "original"
    why: str
    explore: bool  # this build measures a variant not measured yet


def store_name(model: str, variant: str) -> str:
    return f"{PREFIX}{model.lower()}:{variant}"


def _comparable(outcome: Outcome | None, rewrite: str, input_bytes: float | None) -> bool:
    """An outcome of this rewrite measured on inputs of about today's size."""
    if outcome is None or outcome.rewrite != rewrite:
        return False
    if input_bytes is None or outcome.input_bytes is None:
        return input_bytes is None and outcome.input_bytes is None
    low, high = sorted((max(input_bytes, 1.0), max(outcome.input_bytes, 1.0)))
    return high / low <= RESIZE_FACTOR


def choose(rewrite: str, input_bytes: float | None, outcomes: dict[str, Outcome]) -> Choice:
    """Which SQL this build runs, and why, from the outcomes measured so far."""
    optimized = outcomes.get("optimized")
    original = outcomes.get("original")
    optimized = optimized if _comparable(optimized, rewrite, input_bytes) else None
    original = original if _comparable(original, rewrite, input_bytes) else None
    if optimized is None:
        why = "first build of this rewrite: optimized, to be compared with the original on the next build"
        return Choice("optimized", why, True)
    if original is None:
        return Choice(
            "original",
            f"exploring: the original this build, to compare with the optimized build of "
            f"{optimized.built_at[:10]} ({optimized.seconds:.1f} s)",
            True,
        )
    if optimized.seconds <= original.seconds * (1 - MARGIN):
        return Choice(
            "optimized",
            f"kept optimized: optimized {optimized.seconds:.1f} s vs original {original.seconds:.1f} s "
            f"on {max(optimized.built_at, original.built_at)[:10]}",
            False,
        )
    return Choice(
        "original",
        f"kept original: optimized {optimized.seconds:.1f} s vs original {original.seconds:.1f} s "
        f"on {max(optimized.built_at, original.built_at)[:10]}",
        False,
    )


def outcomes_of(rows: dict[str, Any], model: str) -> dict[str, Outcome]:
    """The latest outcome per variant of one model from the store's rows by name (payloads)."""
    out = {}
    for variant in VARIANTS:
        payload = rows.get(store_name(model, variant))
        outcome = Outcome.from_payload(payload) if payload is not None else None
        if outcome is not None:
            out[variant] = outcome
    return out
