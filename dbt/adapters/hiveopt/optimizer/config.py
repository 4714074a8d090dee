"""Optimizer settings: rule switches and thresholds, from a profile's `optimizer:` block and a
model's `hiveopt` config (the model wins).

>>> cfg = OptimizerConfig.from_dicts({"broadcast_threshold_bytes": 1024}, {"rules": {"select_join_algorithms": False}})
>>> cfg.broadcast_threshold_bytes, cfg.rule_enabled("select_join_algorithms")
(1024, False)
>>> OptimizerConfig.from_dicts(None, {"enabled": False}).enabled
False
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional

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
# A big side under this size is read quickly anyway: not worth a fetch query.
DEFAULT_PRUNE_MIN_BIG_BYTES = 64 * 1024 * 1024


class ConfigError(ValueError):
    pass


@dataclass
class OptimizerConfig:
    enabled: bool = True
    verify: bool = False
    rules: Dict[str, bool] = field(default_factory=dict)
    broadcast_threshold_bytes: int = DEFAULT_BROADCAST_THRESHOLD_BYTES
    shuffle_hash: bool = True
    shuffle_hash_partition_bytes: int = DEFAULT_SHUFFLE_HASH_PARTITION_BYTES
    shuffle_hash_ratio: float = DEFAULT_SHUFFLE_HASH_RATIO
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS
    parallelism: int = DEFAULT_PARALLELISM
    task_slots: int = DEFAULT_TASK_SLOTS
    skew_key_min_share: float = DEFAULT_SKEW_KEY_MIN_SHARE
    # {"db.table": {"column": [values]}}: hot keys known in advance (Hive's SKEWED BY).
    skewed_keys: Dict[str, Dict[str, list]] = field(default_factory=dict)
    prune_max_values: int = DEFAULT_PRUNE_MAX_VALUES
    prune_fetch_timeout_seconds: float = DEFAULT_PRUNE_FETCH_TIMEOUT_SECONDS
    prune_min_big_bytes: int = DEFAULT_PRUNE_MIN_BIG_BYTES
    # Fetch the small side's key values before a build (session connections only: the fetch is
    # bounded in time there). Off, the rule writes semi-join filters where they win, as it does on
    # Thrift and Connect connections.
    prune_fetch_values: bool = True
    # {"db.table": ["column", ...]}: tables whose files are written sorted (or clustered) by these
    # columns, so a literal key list lets the Parquet reader skip row groups. On any other table
    # not partitioned on the key, pruning from the small side only adds work.
    sorted_keys: Dict[str, List[str]] = field(default_factory=dict)

    def rule_enabled(self, name: str) -> bool:
        return self.enabled and self.rules.get(name, True)

    @classmethod
    def from_dicts(
        cls, profile: Optional[Mapping[str, Any]], model: Optional[Mapping[str, Any]] = None
    ) -> "OptimizerConfig":
        """Merge the profile's block with a model's override; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        merged: Dict[str, Any] = {}
        rules: Dict[str, bool] = {}
        for source in (profile or {}, model or {}):
            for key, value in source.items():
                if key == "rules":
                    rules.update({str(k): bool(v) for k, v in (value or {}).items()})
                elif key in known:
                    merged[key] = value
                elif key in ("stats",):
                    continue  # read by the adapter's statistics store, not by rules
                else:
                    raise ConfigError(f"unknown hiveopt optimizer setting {key!r}")
        merged["rules"] = rules
        cfg = cls(**merged)
        cfg.enabled = _as_bool(cfg.enabled)
        cfg.verify = _as_bool(cfg.verify)
        cfg.shuffle_hash = _as_bool(cfg.shuffle_hash)
        cfg.prune_fetch_values = _as_bool(cfg.prune_fetch_values)
        cfg.broadcast_threshold_bytes = int(cfg.broadcast_threshold_bytes)
        cfg.shuffle_hash_partition_bytes = int(cfg.shuffle_hash_partition_bytes)
        cfg.shuffle_partitions = int(cfg.shuffle_partitions)
        cfg.parallelism = int(cfg.parallelism)
        cfg.task_slots = int(cfg.task_slots)
        cfg.skew_key_min_share = float(cfg.skew_key_min_share)
        if not isinstance(cfg.skewed_keys, Mapping) or not all(
                isinstance(cols, Mapping) and all(isinstance(v, (list, tuple)) for v in cols.values())
                for cols in cfg.skewed_keys.values()):
            raise ConfigError("skewed_keys must map 'db.table' to {column: [values]}")
        cfg.shuffle_hash_ratio = float(cfg.shuffle_hash_ratio)
        cfg.prune_max_values = int(cfg.prune_max_values)
        cfg.prune_fetch_timeout_seconds = float(cfg.prune_fetch_timeout_seconds)
        cfg.prune_min_big_bytes = int(cfg.prune_min_big_bytes)
        return cfg


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)
