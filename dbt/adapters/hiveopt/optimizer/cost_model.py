"""The cost of a join tree in bytes moved, as Spark would run it.

Data movement, not rows alone (Hive's 2026 finding, apache/hive PR 6596: row-count costs pick
shuffle-heavy orders): a join whose smaller buildable input fits under the broadcast threshold
costs that input's bytes times the parallelism (every task receives a copy); otherwise it is a
sort-merge join that shuffles both inputs, except an input already partitioned on the join keys
(the output of a sort-merge join on the same keys, or a table bucketed on them). Every join also
costs the bytes it produces.

Only what Spark will really broadcast counts as a broadcast: one relation (a hint can name it),
or an intermediate result Spark itself sizes under the threshold. Spark sizes a join of tables
statically as the product of their file sizes, so a small join result of real tables is
shuffled, not broadcast (AQE converts it only after both sides have been shuffled).

>>> model = CostModel(broadcast_threshold_bytes=100, parallelism=4)
>>> model.join_cost(JoinInput(1000, None), JoinInput(50, None), keys=[("a.k", "b.k")], output_bytes=400)
(300.0, 'broadcast', None)
>>> model.join_cost(JoinInput(1000, None), JoinInput(500, None), keys=[("a.k", "b.k")], output_bytes=800)[0] - 2 * EXCHANGE_FIXED_BYTES
1700.0
>>> model.join_cost(JoinInput(50, None, buildable=False), JoinInput(1000, None), keys=[("a.k", "b.k")], output_bytes=500)[1]
'sort-merge'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Spark local mode on this machine runs 2 tasks at once; a cluster many more. A broadcast is sent
# to every executor: its bytes count this many times.
DEFAULT_PARALLELISM = 8
# What producing one byte of join output costs relative to shuffling one byte (which is
# serialized, written, fetched and sorted). At 1.0 the join of TPC-H Q2's subquery moved a 32 MB
# table through a shuffle to save 800k streamed rows of broadcast joins, and ran slower (SF 1).
OUTPUT_BYTE_COST = 0.25
# The fixed cost of one exchange (a shuffle stage: its map and reduce tasks, scheduling, files),
# as bytes moved; what makes shuffling two small inputs dearer than broadcasting one of them.
EXCHANGE_FIXED_BYTES = 8 * 1024 * 1024
# Reading one byte of a column from Parquet, relative to shuffling one byte (write, sort, fetch):
# columnar, compressed, read in parallel; the correlation rules weigh a second scan with it.
SCAN_BYTE_COST = 0.25
# Rewriting an aggregate joined back to its input into a window shuffles and sorts the input once
# (per byte about as dear as a shuffle); computing the input a second time must cost at least
# this many times more before the correlation rule trades one for the other.
WINDOW_BYTE_COST = 1.0
MIN_RECOMPUTE_TO_WINDOW_RATIO = 1.0
# What Spark redoes when it computes an input a second time with exchange reuse on (the default):
# the identical shuffle exchanges of both reads run once (ReusedExchange), so the second read
# repeats only the work above its last exchanges. A sort-merge join there re-reads its inputs'
# shuffle files and sorts them again (per byte: a shuffle fetch and a sort, no write).
RESORT_BYTE_COST = 0.5
# An aggregate hashing its input, per byte. Above a reused exchange this is the final aggregate
# merging the partial results; over a sort-merge join on its grouping keys (no exchange between
# them) it is the whole aggregate of the join's output. Measured on TPC-H SF 1 (2 cores): with
# the final aggregate behind the exchange the window form ran 0.98x the original; with the
# aggregate on a sort-merge join grouped by the join key, 1.45x (5.06 s vs 7.33 s).
AGGREGATE_BYTE_COST = 0.25


@dataclass(frozen=True)
class JoinInput:
    bytes: float
    # Join keys (as equivalence-class names) this input is already hash-partitioned on, if any.
    partitioned_on: frozenset[str] | None
    # Whether Spark can build a broadcast on this input: a relation a hint names, or a result
    # Spark's own static estimate puts under the threshold.
    buildable: bool = True


@dataclass
class CostModel:
    broadcast_threshold_bytes: float
    parallelism: int = DEFAULT_PARALLELISM

    def join_cost(
        self, left: JoinInput, right: JoinInput, keys: Sequence[tuple[str, str]], output_bytes: float
    ) -> tuple[float, str, frozenset[str] | None]:
        """(cost, algorithm, partitioning of the output) of joining left and right."""
        output = output_bytes * OUTPUT_BYTE_COST
        if not keys:
            # No equi key: a nested-loop join; the smaller side is broadcast whatever its size.
            return min(left.bytes, right.bytes) * self.parallelism + output, "nested loop", None
        builds = [
            side.bytes for side in (left, right) if side.buildable and side.bytes <= self.broadcast_threshold_bytes
        ]
        if builds:
            return min(builds) * self.parallelism + output, "broadcast", None
        key_set = frozenset(k for pair in keys for k in pair)
        shuffle = sum(side.bytes + EXCHANGE_FIXED_BYTES for side in (left, right) if not _partitioned(side, key_set))
        return shuffle + output, "sort-merge", key_set


def _partitioned(side: JoinInput, keys: frozenset[str]) -> bool:
    return side.partitioned_on is not None and bool(side.partitioned_on & keys)


# A skew-join rewrite reads both inputs of the join twice (once per UNION ALL branch, each
# filtered by the hot keys): that repeated work, as a share of the join's own work.
REPEATED_SCAN_SHARE = 0.5


def skew_join_speedup(largest_key_share: float, task_slots: int) -> float:
    """How much faster a skew-join rewrite should run than the sort-merge join it replaces.

    The sort-merge join lasts as long as its longest task: one key's rows all go to one task, so
    at least the largest hot key's share of the work, and never less than an even split over the
    task slots. The rewrite spreads the hot rows over every slot (the other side's hot rows are
    broadcast), at the price of reading the inputs again.

    >>> round(skew_join_speedup(0.9, 2), 2), round(skew_join_speedup(0.5, 2), 2), round(skew_join_speedup(0.5, 16), 2)
    (1.2, 0.67, 5.33)
    """
    slots = max(int(task_slots), 1)
    written = max(largest_key_share, 1.0 / slots)
    rewritten = (1.0 + REPEATED_SCAN_SHARE) / slots
    return written / rewritten
