"""The query graph of one run of inner joins in a SELECT block, for join reordering.

A run is a stretch of inner (or comma / cross) joins. A LEFT / RIGHT / FULL / SEMI / ANTI join
ends it and stays where it is. The leading run starts at the FROM relation; a run after such a
barrier starts with everything before it (the prefix, up to and including the barrier) as one
node, which keeps its own order. Nodes are the run's relations (tables, derived tables, CTE
references) and the prefix; edges are equi-join predicates from ON clauses, and from WHERE
conjuncts spanning two relations when the block has no barrier at all; other predicates that
span relations are kept with the set of nodes they need.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT * FROM a, b JOIN c ON b.k = c.k WHERE a.k = b.k AND c.v > 1", read="spark")
>>> g = build_join_graph(q)
>>> g.aliases, [(e.left, e.right) for e in g.edges]
(['a', 'b', 'c'], [('b', 'c'), ('a', 'b')])
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.syntax import aliases_of, conjuncts, equi_pair, is_inner_join, source_alias

# The node standing for the joins before a barrier, in runs after it.
PREFIX = "(joins before the barrier)"


@dataclass
class Edge:
    left: str
    right: str
    predicate: exp.Expression  # an equality of a column of `left` and a column of `right`
    left_column: exp.Column = None
    right_column: exp.Column = None

    @property
    def columns(self) -> tuple[exp.Column, exp.Column]:
        return self.left_column, self.right_column


@dataclass
class JoinGraph:
    select: exp.Select
    aliases: list[str]  # the run's relations, in written order
    sources: dict[str, exp.Expression]  # alias -> the FROM/JOIN source node as written
    edges: list[Edge] = field(default_factory=list)
    # Predicates spanning relations that are not equi-join edges: placed where all they read is joined.
    complex_predicates: list[tuple[frozenset[str], exp.Expression]] = field(default_factory=list)
    # ON conjuncts of inner joins that read a single relation: they become WHERE conjuncts.
    local_on_predicates: list[exp.Expression] = field(default_factory=list)
    # WHERE conjuncts moved into the run's ON clauses (join predicates written in WHERE).
    moved_from_where: list[exp.Expression] = field(default_factory=list)
    run_length: int = 0  # number of joins of select.args["joins"] in the run
    start: int = 0  # index of the run's first join (after the prefix)
    # The prefix of a run after a barrier: its first relation and its joins, as written.
    prefix: tuple[exp.Expression, list[exp.Join]] | None = None
    prefix_aliases: frozenset[str] = frozenset()
    barrier: str | None = None  # why the run ends before the last join, if it does
    blocked: str | None = None  # why the run cannot be reordered at all, if it cannot

    def node_of(self, alias: str) -> str:
        """The node a relation alias belongs to: itself, or the prefix."""
        return PREFIX if alias in self.prefix_aliases else alias


def _movable(predicate: exp.Expression) -> bool:
    """A WHERE conjunct that may move into an inner join's ON: deterministic, no subquery."""
    return predicate.find(exp.Query) is None and not any(
        f.name.lower() in ("rand", "randn", "uuid", "shuffle") for f in predicate.find_all(exp.Func)
    )


def _barrier(join: exp.Join) -> str | None:
    if not is_inner_join(join) or isinstance(join.this, exp.Unnest) or join.args.get("method"):
        return (
            f"{(join.side or join.kind or join.args.get('method') or 'special').upper()} join of {source_alias(join)}"
        )
    return None


def next_run_start(select: exp.Select, after: int) -> int | None:
    """Index of the first join of the next run after the joins before `after`, if any."""
    joins = select.args.get("joins") or []
    for i in range(after, len(joins)):
        if _barrier(joins[i]) is not None and i + 1 < len(joins) and _barrier(joins[i + 1]) is None:
            return i + 1
    return None


def build_join_graph(select: exp.Select, start: int = 0) -> JoinGraph | None:
    """The graph of the run starting at join `start` (0: the leading run), or None."""
    joins = select.args.get("joins") or []
    from_ = select.args.get("from_")
    if not joins or from_ is None or start > len(joins):
        return None
    if start == 0:
        first = source_alias(from_)
        aliases, sources, prefix_aliases, prefix = [first], {first: from_.this}, frozenset(), None
    else:
        prefix_aliases = frozenset([source_alias(from_), *(source_alias(j) for j in joins[:start])])
        aliases, sources, prefix = [PREFIX], {PREFIX: None}, (from_.this, joins[:start])
    run_length, barrier = 0, None
    for join in joins[start:]:
        barrier = _barrier(join)
        if barrier:
            break
        alias = source_alias(join)
        if not alias or alias in sources or alias in prefix_aliases:
            barrier = f"relation without a distinct alias: {join.this.sql()[:40]}"
            break
        aliases.append(alias)
        sources[alias] = join.this
        run_length += 1
    if start > 0 or select.args.get("laterals"):
        barrier = barrier or ("lateral view" if select.args.get("laterals") else "a join before the run")
    graph = JoinGraph(
        select=select,
        aliases=aliases,
        sources=sources,
        run_length=run_length,
        barrier=barrier,
        start=start,
        prefix=prefix,
        prefix_aliases=prefix_aliases,
    )
    _add_predicates(graph, select)
    return graph


def _add_predicates(graph: JoinGraph, select: exp.Select) -> None:
    """The run's ON predicates, and WHERE's when nothing in the block stops them, as the graph's
    edges (equi-joins of two nodes), complex predicates (several nodes) or local ON filters."""
    joins = select.args.get("joins") or []
    members = set(graph.aliases)
    candidates: list[tuple[exp.Expression, bool]] = []
    for join in joins[graph.start : graph.start + graph.run_length]:
        candidates += [(p, False) for p in conjuncts(join.args.get("on"))]
    where = select.args.get("where")
    if where is not None and graph.barrier is None:
        # With a barrier in the block, WHERE applies after it: leave WHERE alone.
        candidates += [(p, True) for p in conjuncts(where.this) if _movable(p)]
    for predicate, from_where in candidates:
        read = {graph.node_of(a) for a in aliases_of(predicate)}
        if len(read) <= 1:
            if not from_where:
                graph.local_on_predicates.append(predicate)
            continue
        if not read <= members:
            if not from_where:  # an ON predicate of the run reading outside it: do not reorder
                graph.blocked = "a join predicate of the run reads a relation outside it"
            continue
        pair = equi_pair(predicate)
        if pair is not None and graph.node_of(pair[0].table) != graph.node_of(pair[1].table):
            a, b = pair
            graph.edges.append(Edge(graph.node_of(a.table), graph.node_of(b.table), predicate, a, b))
        else:
            graph.complex_predicates.append((frozenset(read), predicate))
        if from_where:
            graph.moved_from_where.append(predicate)
