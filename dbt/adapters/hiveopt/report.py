"""target/hiveopt/: per model the SQL Spark ran (`<model>.sql`) and the optimizer's record
(`<model>.json`: rules fired and skipped with reasons, statistics used, estimates, timings,
statistics-gathering cost against the build)."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from typing import Any

from dbt.adapters.hiveopt.feedback import REMEMBERED

_lock = threading.Lock()


def _dump(path: str, record: dict[str, Any]) -> None:
    """Write a record whole or not at all: readers take no lock (the actual-rows thread, a build
    reading its feedback, `hiveopt summary` while dbt runs), and a file rewritten in place was
    read half-written (JSONDecodeError) while another thread updated it."""
    part = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
    with open(part, "w") as handle:
        json.dump(record, handle, indent=2, default=str)
    os.replace(part, path)


def model_label(model: dict[str, Any] | None, relation: Any) -> str:
    """A file-safe name: the model's name, prefixed by its kind when it is not a model."""
    if model and model.get("name"):
        kind = model.get("resource_type", "model")
        name = str(model["name"])
        return name if kind == "model" else f"{kind}.{name}"
    if relation is not None:
        return str(getattr(relation, "identifier", relation))
    return "query"


def current_invocation() -> str | None:
    """dbt's id of this invocation (run_results.json has the same): `hiveopt summary` shows only
    the records of the last one."""
    try:
        from dbt_common.invocation import get_invocation_id

        return get_invocation_id()
    except Exception:
        return None


class Report:
    def __init__(self, folder: str):
        self.folder = folder

    @classmethod
    def for_project(cls, config: Any) -> Report:
        target = getattr(config, "target_path", None) or "target"
        root = getattr(config, "project_root", None) or os.getcwd()
        if not os.path.isabs(target):
            target = os.path.join(root, target)
        return cls(os.path.join(target, "hiveopt"))

    def _path(self, label: str, suffix: str) -> str:
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in label)
        return os.path.join(self.folder, safe + suffix)

    def write(self, label: str, sql: str, record: dict[str, Any]) -> None:
        record = {**record, "invocation_id": current_invocation()}
        with _lock:
            os.makedirs(self.folder, exist_ok=True)
            with open(self._path(label, ".sql"), "w") as handle:
                handle.write(sql.rstrip() + "\n")
            _dump(self._path(label, ".json"), record)

    def write_fallback(
        self, label: str, sql: str, reason: str, materialization: str | None, switched_off: bool = False
    ) -> None:
        """The record of a model the optimizer did not touch: the SQL that ran (as written) and why,
        replacing whatever an earlier run wrote."""
        self.write(
            label,
            sql,
            {
                "model": label,
                "materialization": materialization,
                "changed": False,
                "fallback_reason": reason,
                "switched_off": switched_off,
                "fired_rules": [],
                "rules": [],
                "original_sql": sql,
                "optimized_sql": sql,
            },
        )

    def update(self, label: str, changes: dict[str, Any]) -> None:
        """Merge `changes` into a model's record (the actual rows, read at the end of the invocation)."""
        with _lock:
            path = self._path(label, ".json")
            if not os.path.exists(path):
                return
            with open(path) as handle:
                record = json.load(handle)
            record.update(changes)
            _dump(path, record)

    def read(self, label: str) -> dict[str, Any] | None:
        path = self._path(label, ".json")
        if not os.path.exists(path):
            return None
        with open(path) as handle:
            return json.load(handle)

    def add_gathering(
        self,
        label: str,
        table: str,
        seconds: float,
        build_seconds: float | None,
        ratio: float | None,
        how: str | None = None,
    ) -> None:
        """Record the after-build statistics cost next to the model's own build time."""
        entry = {
            "gather_seconds": round(seconds, 3),
            "build_seconds": None if build_seconds is None else round(build_seconds, 3),
            "cost_ratio": None if ratio is None else round(ratio, 3),
        }
        if how:
            entry["how"] = how
        self._add_after_build(label, table, entry)

    def add_gathering_deferred(self, label: str, table: str, reason: str) -> None:
        """Record that the after-build gathering did not run, and why."""
        self._add_after_build(label, table, {"gathered": False, "reason": reason})

    def _add_after_build(self, label: str, table: str, entry: dict[str, Any]) -> None:
        with _lock:
            path = self._path(label, ".json")
            record: dict[str, Any] = {}
            if os.path.exists(path):
                with open(path) as handle:
                    record = json.load(handle)
            record.setdefault("after_build_statistics", {})[table] = entry
            record["invocation_id"] = current_invocation()  # a seed has no other record
            os.makedirs(self.folder, exist_ok=True)
            _dump(path, record)


class RunSummary:
    """What the optimizer did with the models of one dbt invocation, for its one closing line.

    >>> summary = RunSummary()
    >>> summary.add("a", "optimized")
    >>> summary.add("b", "unchanged", "no join or subquery")
    >>> summary.add("c", "unchanged", "no join or subquery")
    >>> summary.add("unit_test.t", "unchanged", "no join or subquery")  # not a model
    >>> summary.line()
    '3 models: 1 optimized, 2 unchanged (2 no join or subquery), 0 fell back'
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outcomes: list[tuple[str, str, str]] = []

    def add(self, label: str, kind: str, reason: str = "") -> None:
        if "." in label:  # unit tests and other nodes that are not models
            return
        with self._lock:
            self._outcomes.append((label, kind, reason))

    def add_result(self, label: str, result: Any) -> None:
        """Classify an OptimizedQuery: optimized, unchanged (and why), or fell back (and why)."""
        if result.changed:
            self.add(label, "optimized")
        elif result.switched_off:
            self.add(label, "unchanged", "rules switched off")
        elif result.fallback_reason:
            self.add(label, "fell back", _category(result.fallback_reason))
        elif result.unchanged_reason:
            reason = result.unchanged_reason
            # "no rewrite found a gain (remembered): decided on <date>; ...": counted without the date
            if REMEMBERED + ": " in reason:
                reason = reason.partition(REMEMBERED + ": ")[0] + REMEMBERED
            self.add(label, "unchanged", reason)
        else:
            absent = sorted(
                t
                for t, used in (result.statistics_used or {}).items()
                if isinstance(used, dict) and used.get("precision") == "absent"
            )
            self.add(
                label,
                "unchanged",
                f"statistics absent for {', '.join(absent[:2])}{' ...' if len(absent) > 2 else ''}"
                if absent
                else "no rewrite found a gain",
            )

    def line(self, reasons: int = 3) -> str | None:
        """One line, or None when no model went through the optimizer; the list is then emptied."""
        with self._lock:
            outcomes, self._outcomes = self._outcomes, []
        if not outcomes:
            return None
        kinds = Counter(kind for _, kind, _ in outcomes)
        parts = []
        for kind in ("optimized", "unchanged", "fell back"):
            why = Counter(reason for _, k, reason in outcomes if k == kind and reason).most_common(reasons)
            detail = f" ({', '.join(f'{n} {reason}' for reason, n in why)})" if why else ""
            parts.append(f"{kinds[kind]} {kind}{detail}")
        return f"{len(outcomes)} models: {', '.join(parts)}"


def _category(reason: str) -> str:
    """A fallback reason without its particulars: `cannot parse: ...` -> `cannot parse`."""
    return reason.split(":")[0].split("(")[0].strip()[:60]
