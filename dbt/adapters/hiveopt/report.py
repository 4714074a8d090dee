"""target/hiveopt/: per model the SQL Spark ran (`<model>.sql`) and the optimizer's record
(`<model>.json`: rules fired and skipped with reasons, statistics used, estimates, timings,
statistics-gathering cost against the build)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Optional

_lock = threading.Lock()


def model_label(model: Optional[Dict[str, Any]], relation: Any) -> str:
    """A file-safe name: the model's name, prefixed by its kind when it is not a model."""
    if model and model.get("name"):
        kind = model.get("resource_type", "model")
        name = str(model["name"])
        return name if kind == "model" else f"{kind}.{name}"
    if relation is not None:
        return str(getattr(relation, "identifier", relation))
    return "query"


class Report:
    def __init__(self, folder: str):
        self.folder = folder

    @classmethod
    def for_project(cls, config: Any) -> "Report":
        target = getattr(config, "target_path", None) or "target"
        root = getattr(config, "project_root", None) or os.getcwd()
        if not os.path.isabs(target):
            target = os.path.join(root, target)
        return cls(os.path.join(target, "hiveopt"))

    def _path(self, label: str, suffix: str) -> str:
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in label)
        return os.path.join(self.folder, safe + suffix)

    def write(self, label: str, sql: str, record: Dict[str, Any]) -> None:
        with _lock:
            os.makedirs(self.folder, exist_ok=True)
            with open(self._path(label, ".sql"), "w") as handle:
                handle.write(sql.rstrip() + "\n")
            with open(self._path(label, ".json"), "w") as handle:
                json.dump(record, handle, indent=2, default=str)

    def write_fallback(self, label: str, sql: str, reason: str, materialization: Optional[str],
                       switched_off: bool = False) -> None:
        """The record of a model the optimizer did not touch: the SQL that ran (as written) and why,
        replacing whatever an earlier run wrote."""
        self.write(label, sql, {
            "model": label, "materialization": materialization, "changed": False, "fallback_reason": reason,
            "switched_off": switched_off, "fired_rules": [], "rules": [], "original_sql": sql, "optimized_sql": sql,
        })

    def read(self, label: str) -> Optional[Dict[str, Any]]:
        path = self._path(label, ".json")
        if not os.path.exists(path):
            return None
        with open(path) as handle:
            return json.load(handle)

    def add_gathering(self, label: str, table: str, seconds: float, build_seconds: Optional[float], ratio: Optional[float]) -> None:
        """Record the after-build statistics cost next to the model's own build time."""
        self._add_after_build(label, table, {
            "gather_seconds": round(seconds, 3),
            "build_seconds": None if build_seconds is None else round(build_seconds, 3),
            "cost_ratio": None if ratio is None else round(ratio, 3),
        })

    def add_gathering_deferred(self, label: str, table: str, reason: str) -> None:
        """Record that the after-build gathering did not run, and why."""
        self._add_after_build(label, table, {"gathered": False, "reason": reason})

    def _add_after_build(self, label: str, table: str, entry: Dict[str, Any]) -> None:
        with _lock:
            path = self._path(label, ".json")
            record: Dict[str, Any] = {}
            if os.path.exists(path):
                with open(path) as handle:
                    record = json.load(handle)
            record.setdefault("after_build_statistics", {})[table] = entry
            os.makedirs(self.folder, exist_ok=True)
            with open(path, "w") as handle:
                json.dump(record, handle, indent=2, default=str)
