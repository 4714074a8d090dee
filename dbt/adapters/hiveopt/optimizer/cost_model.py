"""The cost of a join tree in bytes moved, as Spark would run it.

Data movement, not rows alone (Hive's 2026 finding, apache/hive PR 6596: row-count costs pick
shuffle-heavy orders): a join whose smaller input fits under the broadcast threshold costs that
input's bytes times the parallelism (every task receives a copy); otherwise it is a sort-merge
join that shuffles both inputs, except an input already partitioned on the join keys (the output
of a sort-merge join on the same keys, or a table bucketed on them). Every join also costs the
bytes it produces.

>>> model = CostModel(broadcast_threshold_bytes=100, parallelism=4)
>>> model.join_cost(JoinInput(1000, None), JoinInput(50, None), keys=[("a.k", "b.k")], output_bytes=500)
(700.0, 'broadcast', None)
>>> model.join_cost(JoinInput(1000, None), JoinInput(500, None), keys=[("a.k", "b.k")], output_bytes=800)[0]
2300.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional, Sequence, Tuple

# Spark local mode on this machine runs 2 tasks at once; a cluster many more. A broadcast is sent
# to every executor: its bytes count this many times.
DEFAULT_PARALLELISM = 8
# What producing one byte of join output costs relative to moving one byte.
OUTPUT_BYTE_COST = 1.0
# Reading one byte of a column from Parquet, relative to shuffling one byte (write, sort, fetch):
# columnar, compressed, read in parallel; the correlation rules weigh a second scan with it.
SCAN_BYTE_COST = 0.25
# Rewriting an aggregate joined back to its input into a window shuffles and sorts the input once
# (per byte about as dear as a shuffle); computing the input a second time must cost at least
# this many times more before the correlation rule trades one for the other.
WINDOW_BYTE_COST = 1.0
MIN_RECOMPUTE_TO_WINDOW_RATIO = 1.0


@dataclass(frozen=True)
class JoinInput:
    bytes: float
    # Join keys (as equivalence-class names) this input is already hash-partitioned on, if any.
    partitioned_on: Optional[FrozenSet[str]]


@dataclass
class CostModel:
    broadcast_threshold_bytes: float
    parallelism: int = DEFAULT_PARALLELISM

    def join_cost(self, left: JoinInput, right: JoinInput, keys: Sequence[Tuple[str, str]],
                  output_bytes: float) -> Tuple[float, str, Optional[FrozenSet[str]]]:
        """(cost, algorithm, partitioning of the output) of joining left and right."""
        output = output_bytes * OUTPUT_BYTE_COST
        smaller = min(left.bytes, right.bytes)
        if keys and smaller <= self.broadcast_threshold_bytes:
            return smaller * self.parallelism + output, "broadcast", None
        if not keys:
            # No equi key: a nested-loop join; the smaller side is broadcast whatever its size.
            return smaller * self.parallelism + output, "nested loop", None
        key_set = frozenset(k for pair in keys for k in pair)
        shuffle = sum(side.bytes for side in (left, right) if not _partitioned(side, key_set))
        return shuffle + output, "sort-merge", key_set


def _partitioned(side: JoinInput, keys: FrozenSet[str]) -> bool:
    return side.partitioned_on is not None and bool(side.partitioned_on & keys)
