"""The filter partition pruning puts on a big side (rules/prune_partitions_from_small_side.py), from
what the pre-pass fetched for its small side: an IN-list of the key values, FALSE when there are
none, a BETWEEN when there are too many for a list, or a semi-join filter (`key IN (SELECT ...)`)
where no literals can be written. Each is a PrunePredicate, or a Skip saying why none pays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import FetchedValues
from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.fetched_literals import fetched_literal, literal_kind, range_fraction, sort_key
from dbt.adapters.hiveopt.optimizer.prune_candidates import MAX_KEY_FRACTION, PruneCandidate
from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog

# A BETWEEN (too many values for a list) must cover at most this fraction of the key's min..max.
MAX_RANGE_FRACTION = 0.5

NOT_FETCHED = "the small side's values were not fetched (an ODBC connection, prune_fetch_values off, or another build)"


@dataclass(frozen=True)
class PrunePredicate:
    """A filter on the big side's key, and what it is, for the record."""

    predicate: exp.Expression
    description: str

    @property
    def is_semi_join(self) -> bool:
        return isinstance(self.predicate.args.get("query"), exp.Subquery)


def pruning_predicate(
    candidate: PruneCandidate,
    fetched: FetchedValues | None,
    statistics: StatsCatalog,
    config: OptimizerConfig,
) -> PrunePredicate | Skip:
    """The filter for the candidate's big side from its small side's fetched values (None: not
    fetched), or a Skip."""
    if fetched is None:
        return semi_join_filter(candidate, NOT_FETCHED)
    if fetched.error is not None:
        return semi_join_filter(candidate, f"the small side's values could not be fetched: {fetched.error}")
    present = [v for v in fetched.values if v is not None] if fetched.values is not None else None
    if present is not None and len(present) <= config.prune_max_values:
        return _value_list(candidate, present)
    return _value_range(candidate, fetched, statistics, config)


def _value_list(candidate: PruneCandidate, present: list[Any]) -> PrunePredicate | Skip:
    """`key IN (the values)`, FALSE when there are none."""
    values = sorted(set(present), key=sort_key)
    if not values:
        # No key on the small side: no big-side row can match (inner, semi, or the
        # null-supplying side of a LEFT join, which then holds NULLs only).
        return PrunePredicate(exp.false(), "FALSE (the small side holds no key)")
    share = len(values) / candidate.big_ndv
    if share > MAX_KEY_FRACTION:
        return Skip(
            f"the small side holds {len(values)} key values, about {min(share, 1):.0%} of the key's "
            f"{candidate.big_ndv} distinct values: too little to prune"
        )
    kind = literal_kind(candidate.big_type)
    literals = [fetched_literal(v, kind, candidate.big_type) for v in values]
    if any(lit is None for lit in literals):
        return Skip(f"a fetched value does not fit the key's type ({kind}): left to Spark")
    return PrunePredicate(exp.In(this=_big_key(candidate), expressions=literals), f"an IN-list of {len(values)} values")


def _value_range(
    candidate: PruneCandidate, fetched: FetchedValues, statistics: StatsCatalog, config: OptimizerConfig
) -> PrunePredicate | Skip:
    """`key BETWEEN low AND high` when the values were too many for a list and their range prunes;
    else a semi-join filter."""
    kind = literal_kind(candidate.big_type)
    low, high = (
        fetched_literal(fetched.low, kind, candidate.big_type),
        fetched_literal(fetched.high, kind, candidate.big_type),
    )
    if fetched.low is None or low is None or high is None:
        return semi_join_filter(candidate, "more values than the list bound and no usable min/max")
    column = statistics.get(candidate.big_table).column(candidate.big_column)
    covered = range_fraction(fetched.low, fetched.high, column.min, column.max)
    if covered is None or covered > MAX_RANGE_FRACTION:
        share = "unknown" if covered is None else f"{covered:.0%}"
        return semi_join_filter(
            candidate,
            f"more than {config.prune_max_values} values and their range covers {share} of "
            "the key's min..max: a range prunes too little",
        )
    return PrunePredicate(
        exp.Between(this=_big_key(candidate), low=low, high=high),
        f"a range (more than {config.prune_max_values} values; {covered:.0%} of the key's min..max)",
    )


def semi_join_filter(candidate: PruneCandidate, why: str) -> PrunePredicate | Skip:
    """`key IN (SELECT /*+ BROADCAST(small) */ small.key FROM small WHERE its filters)` where no
    literals can be written (values not fetched: a timeout, a failed fetch; too many for a list or a
    range), or a Skip. Measured (bench/pruning.py, 30M-row fact): below an aggregate by the key it
    wins (19 s -> 1.6 s sorted, 2.5 s unsorted), as the aggregate reads only matching rows; where
    the big side is read as is it lost (0.77-0.94x): the join already filters it, Spark's DPP
    needs a broadcast join and the Parquet reader needs literals."""
    if not candidate.aggregated:
        return Skip(
            f"{why}; a semi-join filter is no faster where the big side is read as is (measured "
            "0.77-0.94x: the join already filters it); left to Spark"
        )
    if candidate.fetch.keys_query is None:
        return Skip(
            f"{why}; the small side's keys are not known to fit a broadcast: no semi-join filter; left to Spark"
        )
    return PrunePredicate(
        exp.In(this=_big_key(candidate), query=exp.Subquery(this=candidate.fetch.keys_query.copy())),
        f"a semi-join filter below the aggregate ({why})",
    )


def _big_key(candidate: PruneCandidate) -> exp.Column:
    return exp.column(candidate.big_key.name, table=candidate.big_alias)
