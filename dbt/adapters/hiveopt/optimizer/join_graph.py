"""The query graph of one SELECT block's inner-join run, for join reordering.

A run is the FROM relation and the joins that follow it while they are inner (or comma / cross)
joins. The first LEFT / RIGHT / FULL / SEMI / ANTI join ends it: that join and everything after
it stay where they are. Nodes are the run's relations (tables, derived tables, CTE references);
edges are equi-join predicates from ON clauses and from WHERE conjuncts spanning two relations;
other predicates that span relations are kept with the set of relations they need.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT * FROM a, b JOIN c ON b.k = c.k WHERE a.k = b.k AND c.v > 1", read="spark")
>>> g = build_join_graph(q)
>>> g.aliases, [(e.left, e.right) for e in g.edges]
(['a', 'b', 'c'], [('b', 'c'), ('a', 'b')])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Tuple

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.estimator import aliases_of, conjuncts, equi_pair, source_alias

INNER_KINDS = ("", "INNER", "CROSS")


@dataclass
class Edge:
    left: str
    right: str
    predicate: exp.Expression  # an equality of a column of `left` and a column of `right`

    @property
    def columns(self) -> Tuple[exp.Column, exp.Column]:
        a, b = equi_pair(self.predicate)
        return (a, b) if a.table == self.left else (b, a)


@dataclass
class JoinGraph:
    select: exp.Select
    aliases: List[str]                       # the run's relations, in written order
    sources: Dict[str, exp.Expression]       # alias -> the FROM/JOIN source node as written
    edges: List[Edge] = field(default_factory=list)
    # Predicates spanning relations that are not equi-join edges: placed where all they read is joined.
    complex_predicates: List[Tuple[FrozenSet[str], exp.Expression]] = field(default_factory=list)
    # ON conjuncts of inner joins that read a single relation: they become WHERE conjuncts.
    local_on_predicates: List[exp.Expression] = field(default_factory=list)
    # WHERE conjuncts moved into the run's ON clauses (join predicates written in WHERE).
    moved_from_where: List[exp.Expression] = field(default_factory=list)
    run_length: int = 0                      # number of joins of select.args["joins"] in the run
    barrier: Optional[str] = None            # why the run ends before the last join, if it does
    blocked: Optional[str] = None            # why the run cannot be reordered at all, if it cannot

    def neighbors(self, alias: str) -> List[str]:
        out = []
        for edge in self.edges:
            if edge.left == alias:
                out.append(edge.right)
            elif edge.right == alias:
                out.append(edge.left)
        return out


def _is_inner(join: exp.Join) -> bool:
    return (join.side or "").upper() == "" and (join.kind or "").upper() in INNER_KINDS and not join.args.get("using") \
        and (join.args.get("method") or "").upper() != "NATURAL"


def _movable(predicate: exp.Expression) -> bool:
    """A WHERE conjunct that may move into an inner join's ON: deterministic, no subquery."""
    return predicate.find(exp.Query) is None and not any(
        f.name.lower() in ("rand", "randn", "uuid", "shuffle") for f in predicate.find_all(exp.Func)
    )


def build_join_graph(select: exp.Select) -> Optional[JoinGraph]:
    """The graph of the block's leading inner-join run, or None when the block has no join."""
    joins = select.args.get("joins") or []
    from_ = select.args.get("from_")
    if not joins or from_ is None:
        return None
    first = source_alias(from_)
    aliases, sources = [first], {first: from_.this}
    run_length, barrier = 0, None
    for join in joins:
        if not _is_inner(join) or isinstance(join.this, exp.Unnest) or join.args.get("method"):
            barrier = f"{(join.side or join.kind or join.args.get('method') or 'special').upper()} join of {source_alias(join)}"
            break
        alias = source_alias(join)
        if not alias or alias in sources:
            barrier = f"relation without a distinct alias: {join.this.sql()[:40]}"
            break
        aliases.append(alias)
        sources[alias] = join.this
        run_length += 1
    if select.args.get("laterals"):
        barrier = barrier or "lateral view"
    graph = JoinGraph(select=select, aliases=aliases, sources=sources, run_length=run_length, barrier=barrier)
    members = set(aliases)

    candidates: List[Tuple[exp.Expression, bool]] = []
    for join in joins[:run_length]:
        candidates += [(p, False) for p in conjuncts(join.args.get("on"))]
    where = select.args.get("where")
    if where is not None and barrier is None:
        # With a barrier later in the block, WHERE applies after it: leave WHERE alone.
        candidates += [(p, True) for p in conjuncts(where.this) if _movable(p)]
    for predicate, from_where in candidates:
        read = aliases_of(predicate)
        if len(read) <= 1:
            if not from_where:
                graph.local_on_predicates.append(predicate)
            continue
        if not read <= members:
            if not from_where:  # an ON predicate of the run reading outside it: do not reorder
                graph.blocked = "a join predicate of the run reads a relation outside it"
            continue
        pair = equi_pair(predicate)
        if pair is not None:
            graph.edges.append(Edge(pair[0].table, pair[1].table, predicate))
        else:
            graph.complex_predicates.append((frozenset(read), predicate))
        if from_where:
            graph.moved_from_where.append(predicate)
    return graph
