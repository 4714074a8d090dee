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

import functools
import hashlib
import json
import os
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
# The row name's last part for a model left as written by a decision the next builds remember
# (NoGain): the optimizer found nothing to gain, or feedback kept the original.
NO_GAIN = "no-gain"
NOTHING_GAINED = "no rewrite found a gain"
ORIGINAL_FASTER = "feedback: the original was faster"
# How the run's summary counts a model left as written from that memory (the record says more).
REMEMBERED = " (remembered)"


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


# -- a model the optimizer left as written ---------------------------------------------------------
# Most joins in a project have nothing to gain (Spark's own plan is the one to run), and looking
# again each build costs the model its catalog reads, statistics and the optimizer: 130-670 ms
# before 2-3 s builds of the example project at SF 0.1 (brand_revenue, big_order_customers). The
# memory keeps "nothing to gain" until the SQL, the settings, the optimizer's code or the size of
# what the model reads (by more than RESIZE_FACTOR) changes.


@functools.lru_cache(maxsize=1)
def optimizer_code() -> str:
    """A fingerprint of the optimizer's code (its package's files): another optimizer decides again.

    >>> len(optimizer_code())
    16
    """
    digest = hashlib.sha1()
    root = os.path.join(os.path.dirname(__file__), "optimizer")
    for folder, _dirs, files in sorted(os.walk(root)):
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), "rb") as handle:
                digest.update(name.encode() + handle.read())
    return digest.hexdigest()[:16]


def decision_key(sql: str, settings: str) -> str:
    """What a remembered decision was taken on: the model's SQL, its settings, the optimizer's code.

    >>> key = decision_key("select 1", "a")
    >>> key == decision_key("select  1", "a"), key == decision_key("select 1", "b")
    (True, False)
    """
    text = "\n".join((" ".join(sql.split()), settings, optimizer_code()))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class NoGain:
    key: str  # decision_key of the build that decided
    input_bytes: float  # the size on disk of the tables the model reads (through views)
    decided_at: str  # ISO time
    reason: str = NOTHING_GAINED  # or ORIGINAL_FASTER
    detail: str = ""  # feedback's why ("kept original: optimized 2.6 s vs original 2.0 s on ...")

    @classmethod
    def from_payload(cls, payload: str) -> NoGain | None:
        try:
            data = json.loads(payload)
            return cls(
                str(data["key"]),
                float(data["input_bytes"]),
                str(data["decided_at"]),
                str(data.get("reason") or NOTHING_GAINED),
                str(data.get("detail") or ""),
            )
        except (ValueError, TypeError, KeyError):
            return None

    def payload(self) -> str:
        return json.dumps(asdict(self))


def still_no_gain(memory: NoGain | None, key: str, input_bytes: float | None) -> str | None:
    """Why the model runs as written without looking again, or None to look: the same decision key,
    inputs of about the same size.

    >>> memory = NoGain("k1", 1000.0, "2026-11-26T10:00:00")
    >>> print(still_no_gain(memory, "k1", 1500.0))
    no rewrite found a gain (remembered): decided on 2026-11-26; the same SQL, settings and optimizer, inputs within 2x
    >>> still_no_gain(memory, "k1", 2500.0), still_no_gain(memory, "k2", 1000.0), still_no_gain(memory, "k1", None)
    (None, None, None)
    >>> kept = NoGain("k1", 1000.0, "2026-11-26T10:00:00", ORIGINAL_FASTER, "kept original: 2.6 s vs 2.0 s")
    >>> print(still_no_gain(kept, "k1", 900.0).split("; ")[0])
    feedback: the original was faster (remembered): kept original: 2.6 s vs 2.0 s
    """
    if memory is None or memory.key != key or input_bytes is None:
        return None
    low, high = sorted((max(input_bytes, 1.0), max(memory.input_bytes, 1.0)))
    if high / low > RESIZE_FACTOR:
        return None
    return (
        f"{memory.reason}{REMEMBERED}: {memory.detail or 'decided on ' + memory.decided_at[:10]}; "
        f"the same SQL, settings and optimizer, inputs within {RESIZE_FACTOR:g}x"
    )
