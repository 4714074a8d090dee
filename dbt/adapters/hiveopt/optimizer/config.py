"""Optimizer settings: rule switches and thresholds, from a profile's `optimizer:` block and a
model's `hiveopt` config (the model wins).

>>> cfg = OptimizerConfig.from_dicts({"broadcast_threshold_bytes": 1024}, {"rules": {"select_join_algorithms": False}})
>>> cfg.broadcast_threshold_bytes, cfg.rule_enabled("select_join_algorithms")
(1024, False)
>>> OptimizerConfig.from_dicts(None, {"enabled": False}).enabled
False
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Spark's own spark.sql.autoBroadcastJoinThreshold default: the same line, drawn from our
# estimate after filters instead of Spark's unfiltered file size.
DEFAULT_BROADCAST_THRESHOLD_BYTES = 10 * 1024 * 1024
# Above this, a shuffle-hash build side per partition risks memory pressure; Spark's own
# preference check uses autoBroadcastJoinThreshold * numShufflePartitions.
DEFAULT_SHUFFLE_HASH_PARTITION_BYTES = 64 * 1024 * 1024
# Spark's shuffle-hash preference asks the build side to be 3x smaller than the stream side.
DEFAULT_SHUFFLE_HASH_RATIO = 3.0
DEFAULT_SHUFFLE_PARTITIONS = 200
# Tasks that each receive a broadcast copy (the cost model charges a broadcast this many times).
DEFAULT_PARALLELISM = 8
# Tasks the cluster runs at once, when the adapter cannot ask Spark (a local session says).
DEFAULT_TASK_SLOTS = 8
# A heavy hitter is a hot key for the skew-join rewrite from this share of its side's rows on.
DEFAULT_SKEW_KEY_MIN_SHARE = 0.05
# Partition pruning from the small side: at most this many distinct key values become a literal
# IN-list; more become a BETWEEN of their min and max.
DEFAULT_PRUNE_MAX_VALUES = 1000
# The pre-pass that fetches the small side's key values gives up after this long (then the rule
# skips, with the reason in its record).
DEFAULT_PRUNE_FETCH_TIMEOUT_SECONDS = 20.0
# verify mode's comparison of the original and the optimized query is cancelled after this long
# (the model then builds unverified, with a warning): a verify never holds a build for good.
DEFAULT_VERIFY_TIMEOUT_SECONDS = 600.0
# A big side under this size is read quickly anyway: not worth a fetch query.
DEFAULT_PRUNE_MIN_BIG_BYTES = 64 * 1024 * 1024
# A reorder runs only when its tree is estimated this many times cheaper than the written order:
# the calibration sweep measured gains at about 0.6 of the estimated ones (docs/calibration.md).
# Lower it to see more reorders (the differential fuzzer does), raise it where they measure less.
DEFAULT_REORDER_MIN_GAIN = 1.7


class ConfigError(ValueError):
    pass


@dataclass
class OptimizerConfig:
    enabled: bool = True
    verify: bool = False
    verify_timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS
    rules: dict[str, bool] = field(default_factory=dict)
    broadcast_threshold_bytes: int = DEFAULT_BROADCAST_THRESHOLD_BYTES
    # Spark's spark.sql.autoBroadcastJoinThreshold where the models run: a side Spark itself sizes
    # under it (its size on disk, scaled by the columns read) Spark broadcasts without a hint.
    spark_broadcast_threshold_bytes: int = DEFAULT_BROADCAST_THRESHOLD_BYTES
    shuffle_hash: bool = True
    shuffle_hash_partition_bytes: int = DEFAULT_SHUFFLE_HASH_PARTITION_BYTES
    shuffle_hash_ratio: float = DEFAULT_SHUFFLE_HASH_RATIO
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS
    parallelism: int = DEFAULT_PARALLELISM
    task_slots: int = DEFAULT_TASK_SLOTS
    skew_key_min_share: float = DEFAULT_SKEW_KEY_MIN_SHARE
    # {"db.table": {"column": [values]}}: hot keys known in advance (Hive's SKEWED BY).
    skewed_keys: dict[str, dict[str, list]] = field(default_factory=dict)
    prune_max_values: int = DEFAULT_PRUNE_MAX_VALUES
    prune_fetch_timeout_seconds: float = DEFAULT_PRUNE_FETCH_TIMEOUT_SECONDS
    prune_min_big_bytes: int = DEFAULT_PRUNE_MIN_BIG_BYTES
    reorder_min_gain: float = DEFAULT_REORDER_MIN_GAIN
    # Fetch the small side's key values before a build (bounded in time, cancelled on Spark at
    # prune_fetch_timeout_seconds: session, Thrift and Connect connections). Off, the rule writes
    # semi-join filters where they win, as it does where a fetch failed or timed out.
    prune_fetch_values: bool = True
    # {"db.table": ["column", ...]}: tables whose files are written sorted (or clustered) by these
    # columns, so a literal key list lets the Parquet reader skip row groups. On any other table
    # not partitioned on the key, pruning from the small side only adds work.
    sorted_keys: dict[str, list[str]] = field(default_factory=dict)
    # "explore": the adapter measures a rewrite against the SQL as written on consecutive builds
    # and keeps the faster (feedback.py); "off": the optimized SQL always runs.
    feedback: str = "explore"
    # What a model's own settings got wrong (each ignored): the adapter warns, naming the model.
    problems: list[str] = field(default_factory=list)

    def rule_enabled(self, name: str) -> bool:
        return self.enabled and self.rules.get(name, True)

    @classmethod
    def from_dicts(cls, profile: Mapping[str, Any] | None, model: Mapping[str, Any] | None = None) -> OptimizerConfig:
        """Merge the profile's block with a model's override (the model wins). A bad profile entry
        is an error (the profile is checked when it is read: `dbt debug` shows it); a bad model
        entry is ignored and listed in `problems`, so that the model's other settings still apply."""
        profile_values, profile_problems = validate_settings(profile or {})
        if profile_problems:
            raise ConfigError("; ".join(profile_problems))
        model_values, problems = validate_settings(model or {})
        rules = {**profile_values.pop("rules", {}), **model_values.pop("rules", {})}
        cfg = cls(**{**profile_values, **model_values}, rules=rules)
        cfg.problems = problems
        return cfg


# -- checking settings ------------------------------------------------------------------------------

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
# Settings the adapter's statistics store reads: checked here too, where the profile is read.
STATS_SETTINGS = (
    "schema",
    "auto_gather",
    "gather_unread_models",
    "heavy_hitters",
    "histogram_buckets",
    "sample_above_rows",
    "keep_within_size",
    "first_pass",
)
# stats.first_pass: the models that need the invocation's first statistics pass wait for it
# (`wait`), or run as written while it runs beside them (`behind`: their statistics are there for
# the models after it, and for the next invocation).
FIRST_PASS_MODES = ("wait", "behind")


def _boolean(value: Any) -> bool:
    """true/false, also as text (a profile's env_var() renders text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{value!r} is not true or false")


def _feedback(value: Any) -> str:
    """explore or off (true and false say the same)."""
    text = str(value).strip().lower()
    if text == "explore" or (isinstance(value, bool) and value) or text in _TRUE:
        return "explore"
    if text == "off" or (isinstance(value, bool) and not value) or text in _FALSE:
        return "off"
    raise ValueError(f"{value!r} is not explore or off")


def _number(kind: type, low: float, high: float = math.inf) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a number")
        try:
            number = kind(value.strip()) if isinstance(value, str) else kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"{value!r} is not {'an integer' if kind is int else 'a number'}") from None
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{value!r} is not an integer")
        if not (low <= number <= high) or (isinstance(number, float) and not math.isfinite(number)):
            raise ValueError(f"{value!r} is outside {low:g}..{high:g}")
        return number

    return convert


def _share(value: Any) -> float:
    share = _number(float, 0.0, 1.0)(value)
    if share <= 0:
        raise ValueError(f"{value!r} must be above 0")
    return share


def _positive(value: Any) -> float:
    number = _number(float, 0.0)(value)
    if number <= 0:
        raise ValueError(f"{value!r} must be above 0")
    return number


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "enabled": _boolean,
    "verify": _boolean,
    "shuffle_hash": _boolean,
    "prune_fetch_values": _boolean,
    "feedback": _feedback,
    "broadcast_threshold_bytes": _number(int, 0),
    "spark_broadcast_threshold_bytes": _number(int, -1),
    "shuffle_hash_partition_bytes": _number(int, 1),
    "shuffle_hash_ratio": _positive,
    "shuffle_partitions": _number(int, 1),
    "parallelism": _number(int, 1),
    "task_slots": _number(int, 1),
    "skew_key_min_share": _share,
    "prune_max_values": _number(int, 1),
    "prune_fetch_timeout_seconds": _positive,
    "verify_timeout_seconds": _positive,
    "prune_min_big_bytes": _number(int, 0),
    "reorder_min_gain": _number(float, 1.0),
}


def validate_settings(block: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the entries that are valid, converted; what is wrong with the others, one line each,
    naming the setting). Values from outside the query are checked here before any rule sees
    them: a NULL hot key, a rule switch of "false" read as true, an unknown rule name.

    >>> values, problems = validate_settings({"rules": {"reorder_joins": "false", "reorder": False},
    ...     "skewed_keys": {"db.f": {"k": [None, "hot"]}}, "task_slots": "4", "verify": "maybe"})
    >>> values
    {'rules': {'reorder_joins': False}, 'skewed_keys': {'db.f': {'k': ['hot']}}, 'task_slots': 4}
    >>> problems  # doctest: +NORMALIZE_WHITESPACE
    ["rules: unknown rule 'reorder' (rules: merge_correlated_aggregates, merge_sibling_aggregates,
      reorder_joins, rewrite_skew_joins, select_join_algorithms, prune_partitions_from_small_side;
      parts: merge_sibling_aggregates.merge_derived_siblings, merge_sibling_aggregates.group_by_distinct_first,
      merge_sibling_aggregates.widen_scalar_siblings, merge_sibling_aggregates.join_scalar_siblings)",
     "skewed_keys['db.f']['k']: NULL is never a hot key",
     "verify: 'maybe' is not true or false"]
    """
    if not isinstance(block, Mapping):
        return {}, [f"optimizer settings must be a mapping, not {type(block).__name__}"]
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in block.items():
        key = str(key)
        try:
            if key in _CHECKS:
                values[key] = _CHECKS[key](value)
            elif key == "rules":
                values[key] = _rules(value, problems)
            elif key == "skewed_keys":
                values[key] = _skewed_keys(value, problems)
            elif key == "sorted_keys":
                values[key] = _sorted_keys(value)
            elif key == "stats":
                _stats_settings(value)  # read by the adapter's statistics store, not by rules
            else:
                known = ", ".join(sorted([*_CHECKS, "rules", "skewed_keys", "sorted_keys", "stats"]))
                problems.append(f"unknown setting {key!r} (settings: {known})")
        except ValueError as error:
            problems.append(f"{key}: {error}")
    return values, problems


# Rule names that once stood in the rule list, and why they left: a switch for one is accepted and
# ignored, so that a profile written for an earlier version (the README's template listed them) still
# passes `dbt debug`.
RETIRED_RULES = {
    "reuse_repeated_subqueries": "it rewrote nothing (Spark's exchange reuse runs a repeated subquery's "
    "shuffles once; docs/rules/exchange_reuse.md)",
}


def _rules(value: Any, problems: list[str]) -> dict[str, bool]:
    from dbt.adapters.hiveopt.optimizer.pipeline import PART_NAMES, RULE_NAMES  # RULES is the source of truth

    if not isinstance(value, Mapping):
        raise ValueError("must map rule names to true or false")
    switches: dict[str, bool] = {}
    for name, switch in value.items():
        if str(name) in RETIRED_RULES:
            continue  # a profile written for an earlier version keeps working
        if str(name) not in RULE_NAMES + PART_NAMES:
            problems.append(
                f"rules: unknown rule {name!r} (rules: {', '.join(RULE_NAMES)}; parts: {', '.join(PART_NAMES)})"
            )
            continue
        try:
            switches[str(name)] = _boolean(switch)
        except ValueError as error:
            problems.append(f"rules.{name}: {error}")
    return switches


def _skewed_keys(value: Any, problems: list[str]) -> dict[str, dict[str, list]]:
    """{'db.table': {'column': [values]}}; NULL and non-scalar values are dropped (the rule then
    drops those that do not convert to the column's type, which it knows)."""
    if not isinstance(value, Mapping):
        raise ValueError("must map 'db.table' to {column: [values]}")
    out: dict[str, dict[str, list]] = {}
    for table, columns in value.items():
        if not isinstance(columns, Mapping):
            problems.append(f"skewed_keys[{table!r}]: must map columns to lists of values")
            continue
        for column, keys in columns.items():
            where = f"skewed_keys[{table!r}][{column!r}]"
            if not isinstance(keys, (list, tuple)):
                problems.append(f"{where}: must be a list of values")
                continue
            kept = []
            for key in keys:
                if key is None:
                    problems.append(f"{where}: NULL is never a hot key")
                elif isinstance(key, (str, int, float, datetime.date)) and not isinstance(key, bool):
                    kept.append(key)
                else:
                    problems.append(f"{where}: {key!r} is not a key value")
            if kept:
                out.setdefault(str(table), {})[str(column)] = kept
    return out


def _sorted_keys(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, Mapping) or not all(
        isinstance(cols, (list, tuple)) and all(isinstance(c, str) for c in cols) for cols in value.values()
    ):
        raise ValueError("must map 'db.table' to a list of column names")
    return {str(t): list(cols) for t, cols in value.items()}


def _stats_settings(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError("must be a mapping")
    out: dict[str, Any] = {}
    for key, setting in value.items():
        if key not in STATS_SETTINGS:
            raise ValueError(f"unknown setting {key!r} (settings: {', '.join(STATS_SETTINGS)})")
        if key == "schema" and not (isinstance(setting, str) and setting.replace("_", "").isalnum()):
            raise ValueError(f"schema: {setting!r} is not a schema name")
        try:  # the message names the setting: `stats: keep_within_size: 0.9 is outside 1..100`
            if key in ("auto_gather", "gather_unread_models"):
                setting = _boolean(setting)
            if key in ("heavy_hitters", "histogram_buckets"):
                setting = _number(int, 1, 1000)(setting)
            if key == "sample_above_rows":
                setting = _number(int, 0, 10**15)(setting)
            if key == "keep_within_size":
                setting = _number(float, 1.0, 100.0)(setting)
            if key == "first_pass":
                if str(setting).strip().lower() not in FIRST_PASS_MODES:
                    raise ValueError(f"{setting!r} is not one of {', '.join(FIRST_PASS_MODES)}")
                setting = str(setting).strip().lower()
        except ValueError as error:
            raise ValueError(f"{key}: {error}") from None
        out[key] = setting
    return out


def stats_settings(block: Mapping[str, Any] | None) -> dict[str, Any]:
    """The profile's `stats:` settings, converted (`auto_gather: "false"` is off). The profile was
    checked when it was read; here a bad block counts as no settings.

    >>> stats_settings({"stats": {"auto_gather": "false", "heavy_hitters": "5"}})
    {'auto_gather': False, 'heavy_hitters': 5}
    """
    try:
        return _stats_settings((block or {}).get("stats") or {})
    except ValueError:
        return {}
