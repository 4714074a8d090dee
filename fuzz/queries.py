"""A random query generator (random.Random, seeded) producing Spark SQL over the fuzzer's tables.

It covers the shapes the optimizer's rules target and their near misses:

- `join`: star and chain joins of 2-8 relations written in random orders, inner / LEFT / RIGHT /
  FULL / LEFT SEMI / LEFT ANTI joins mixed in, comma joins with their conditions in WHERE (a
  quarter of those with the keys repeated in each branch of an OR, as TPC-H Q19), CROSS
  joins of a relation joined later, local and cross-relation filters, GROUP BY / HAVING, DISTINCT,
  window functions, ORDER BY every output column + LIMIT, derived tables and CTEs as relations;
- `joined_back`: an aggregate joined back to its input (a derived table GROUP BY k joined to the
  same table or CTE on k, inner, LEFT or RIGHT), over tables and over CTEs that aggregate a join
  by its key (what merge_correlated_aggregates fires on);
- `correlated`: correlated scalar subqueries comparing a row to an aggregate of its own input
  (TPC-H Q17 / Q2, TPC-DS q1 shapes), in WHERE and elsewhere; IN subqueries keeping the keys of an
  aggregate of a relation by HAVING, joined back on the key (TPC-H Q18), and their near misses;
- `siblings`: aggregates of one input with different filters, cross joined (TPC-DS q28) or joined
  on a key, COUNT(DISTINCT) included; `scalar_siblings`: uncorrelated scalar subqueries over one
  table in a SELECT list or WHERE (q9);
- `cte_twice`: a CTE read twice; `union`: UNION ALL of two blocks; `pruning` and `skew`: joins
  built for partition pruning and skew splits;
- `nondeterministic`: a few queries with rand(), never compared (they check that the optimizer
  does not duplicate a non-deterministic expression).

Every output column has an alias (a share of the cases then drop some: `without_output_aliases`),
output names are unique, ORDER BY + LIMIT orders by every
output column (a total order of the rows), window functions are deterministic (no ROW_NUMBER, no
frame over ties). Joins are bounded: the generator estimates a join's rows from the real key
frequencies (independent edges) and draws again when a block could return more than MAX_ROWS.

>>> from fuzz.tables import build_data
>>> gen = QueryGenerator(build_data(), seed=3)
>>> q = gen.query()
>>> isinstance(q.sql, str) and q.shape in SHAPES
True
"""

from __future__ import annotations

import datetime
import decimal
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from fuzz.tables import DATABASE, HOT_TABLES, TABLES, FuzzData

# A join block the generator writes is estimated at most this many rows (before filters).
MAX_ROWS = 40_000
# Join blocks weigh most: reorder_joins fires only where a block of three or more relations is
# written in an order 1.7x worse than its best, and at 28 it fell to 4% of the test slice.
SHAPES = {
    "join": 36,
    "joined_back": 16,
    "correlated": 16,
    "siblings": 6,
    "scalar_siblings": 4,
    "cte_twice": 4,
    "union": 4,
    "pruning": 15,
    "skew": 14,
    "nondeterministic": 2,
}
ALIAS_OF = {
    "fact": "f",
    "fact2": "g",
    "part_f": "pf",
    "dim_k": "dk",
    "dim_s": "ds",
    "dim_d": "dd",
    "dim_p": "dp",
    "dim_g": "dg",
    "orders": "o",
    "lines": "l",
}
DIMENSIONS = ("dim_k", "dim_s", "dim_d", "dim_p", "dim_g")
LIKE_PATTERNS = ["%a%", "p%", "%\\\\%", "%'%", "_", "%ü%", "it\\_s"]
# How often a predicate over a relation with a boolean column is drawn on that column (besides
# its share of the columns): often enough that bare-boolean filters meet every rule's analysis.
BOOLEAN_PICK = 0.15
NUMERIC = ("int", "bigint", "double", "decimal(12,2)", "decimal(10,2)", "decimal(13,2)", "decimal(22,2)")


@dataclass
class Query:
    sql: str
    shape: str
    deterministic: bool = True


@dataclass
class Col:
    name: str
    type: str
    domain: str | None
    freq: Counter  # non-NULL values -> count (estimates and literals)


@dataclass
class Rel:
    """A FROM item: a table, a CTE or a derived table, with what the generator knows of it."""

    alias: str
    source: str  # the text before the alias: `fuzz.fact`, a CTE's name, `(SELECT ...)`
    columns: list[Col]
    rows: float

    def col(self, name: str) -> Col:
        return next(c for c in self.columns if c.name == name)

    def ref(self, name: str) -> str:
        return f"{self.alias}.{name}"

    def keys(self, domain: str | None = None) -> list[Col]:
        return [c for c in self.columns if c.domain and (domain is None or c.domain == domain)]

    def measures(self, numeric: bool = True) -> list[Col]:
        return [c for c in self.columns if not numeric or c.type in NUMERIC]


@dataclass
class Step:
    rel: Rel
    kind: str  # "", "JOIN", "LEFT JOIN", ..., "CROSS JOIN", "," (the first item has "")
    on: list[str] = field(default_factory=list)


class Rejected(Exception):
    """The drawn block is too big or impossible: draw again."""


def lit(value: Any, type_: str = "") -> str:
    """A Spark SQL literal for a Python value (strings escaped by sqlglot's generator)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return exp.Literal.string(value).sql("spark")
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"CAST('{value}' AS {type_.upper() or 'DECIMAL(12,2)'})" if type_ else str(value)
    if isinstance(value, float):
        if value != value:
            return "CAST('NaN' AS DOUBLE)"
        return f"CAST('{value!r}' AS DOUBLE)" if value == 0 and str(value).startswith("-") else f"{value!r}D"
    return str(value)


class QueryGenerator:
    def __init__(self, data: FuzzData, seed: int = 0):
        self.data = data
        self.rng = random.Random(seed)
        self._aliases: Counter = Counter()
        self._names = 0

    # -- helpers ----------------------------------------------------------------------------
    def _reset(self) -> None:
        self._aliases = Counter()
        self._names = 0
        self._ctes: list[str] = []  # CTEs the relations drawn so far name (relation())

    def alias(self, table: str) -> str:
        base = ALIAS_OF.get(table, table[:2])
        self._aliases[base] += 1
        n = self._aliases[base]
        return base if n == 1 else f"{base}{n}"

    def out_name(self, hint: str = "") -> str:
        """A fresh output name; sometimes in mixed case (output names keep their case)."""
        self._names += 1
        r = self.rng.random()
        if r < 0.15 and hint:
            return f"{hint.capitalize()}_{self._names}"
        if r < 0.3 and hint:
            return f"{hint}_{self._names}"
        return f"c{self._names}"

    def table(self, name: str, alias: str | None = None) -> Rel:
        freq = self.data.frequencies[name]
        columns = [Col(c.name, c.type, c.domain, freq[c.name]) for c in TABLES[name]]
        return Rel(alias or self.alias(name), f"{DATABASE}.{name}", columns, len(self.data.rows[name]))

    def pick(self, seq: Sequence, weights: Sequence[float] | None = None):
        return self.rng.choices(list(seq), weights=weights)[0] if weights else self.rng.choice(list(seq))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def value(self, col: Col) -> Any:
        """A value of the column: mostly one it holds (frequent ones more often), sometimes not."""
        if col.freq and self.chance(0.85):
            values = list(col.freq)
            if self.chance(0.5):
                return self.pick(values)
            return self.pick(values, [col.freq[v] for v in values])
        return self._outside(col.type)

    def _outside(self, type_: str) -> Any:
        if type_ == "boolean":
            return self.chance(0.5)
        if type_ in ("int", "bigint"):
            return self.rng.randint(-5, 300)
        if type_ == "string":
            return self.pick(["nope", "it's", "ZZ", "\\", "日本語", ""])
        if type_ == "date":
            return datetime.date(2023, 12, 25) + datetime.timedelta(days=self.rng.randrange(60))
        if type_.startswith("decimal"):
            return decimal.Decimal(self.rng.randint(-500, 100000)) / 100
        return self.rng.randint(-100, 1000) / 4.0

    # -- predicates and expressions ---------------------------------------------------------
    def predicate(self, rel: Rel, col: Col | None = None) -> str:
        flags = [c for c in rel.columns if c.type == "boolean"]
        if col is None and flags and self.chance(BOOLEAN_PICK):
            col = self.pick(flags)
        col = col or self.pick(rel.columns)
        ref = rel.ref(col.name)
        t = col.type
        if t == "boolean" and self.chance(0.7):  # the column alone, or as a boolean expression
            forms = [
                ref,
                f"NOT {ref}",
                f"{ref} IS NOT TRUE",
                f"{ref} IS FALSE",
                f"COALESCE({ref}, {lit(self.value(col))})",
            ]
            return self.pick(forms, [4, 2, 1, 1, 1])
        r = self.rng.random()
        if r < 0.08:
            return f"{ref} IS {'NOT ' if self.chance(0.6) else ''}NULL"
        if r < 0.22:
            values = sorted({self.value(col) for _ in range(self.rng.randint(1, 4))}, key=repr)
            neg = "NOT " if self.chance(0.2) else ""
            return f"{ref} {neg}IN ({', '.join(lit(v, t) for v in values)})"
        if t == "string":
            if self.chance(0.2):
                pattern = lit(self.pick(LIKE_PATTERNS))
                return f"{ref} LIKE {pattern}"
            if self.chance(0.1):
                return f"LENGTH({ref}) > {self.rng.randint(0, 6)}"
        if t == "double" and self.chance(0.05):
            return f"NOT isnan({ref})"
        if t in ("int", "bigint", "date") or t.startswith("decimal") or t == "double":
            if self.chance(0.25):
                a, b = sorted([self.value(col), self.value(col)], key=repr if t == "string" else None)
                return f"{ref} BETWEEN {lit(a, t)} AND {lit(b, t)}"
        op = self.pick(["=", "<>", "<", "<=", ">", ">="], [3, 1, 2, 1, 2, 1])
        return f"{ref} {op} {lit(self.value(col), t)}"

    def filters(self, rels: Sequence[Rel], n: int) -> list[str]:
        out = []
        for _ in range(n):
            rel = self.pick(rels)
            p = self.predicate(rel)
            if self.chance(0.12):
                p = f"({p} OR {self.predicate(rel)})"
            elif self.chance(0.06):
                p = f"NOT ({p})"
            out.append(p)
        return out

    def cross_predicate(self, rels: Sequence[Rel]) -> str | None:
        """A non-equi predicate between two relations (columns of one type)."""
        if len(rels) < 2:
            return None
        a, b = self.rng.sample(list(rels), 2)
        pairs = [(x, y) for x in a.columns for y in b.columns if x.type == y.type and x.type != "string"]
        if not pairs:
            return None
        x, y = self.pick(pairs)
        return f"{a.ref(x.name)} {self.pick(['<', '<=', '>', '<>'])} {b.ref(y.name)}"

    def expression(self, rel: Rel) -> tuple[str, str]:
        """(a scalar expression over the relation, its type)."""
        col = self.pick(rel.columns)
        ref, t = rel.ref(col.name), col.type
        r = self.rng.random()
        if r < 0.5:
            return ref, t
        if t in ("int", "bigint"):
            return self.pick(
                [
                    (f"{ref} + {self.rng.randint(1, 9)}", t),
                    (f"COALESCE({ref}, -1)", t),
                    (f"CASE WHEN {ref} > {self.value(col)} THEN 'hi' ELSE 'lo' END", "string"),
                    (f"CAST({ref} AS STRING)", "string"),
                    (f"{ref} * 2", t),
                ]
            )
        if t == "double":
            return self.pick([(f"ROUND({ref} * 2, 2)", t), (f"ABS({ref})", t), (f"COALESCE({ref}, 0D)", t)])
        if t.startswith("decimal"):
            return self.pick(
                [(f"{ref} * 2", "decimal(13,2)"), (f"{ref} + 1", "decimal(13,2)"), (f"COALESCE({ref}, 0)", t)]
            )
        if t == "string":
            other = self.pick([c for c in rel.columns if c.type == "string"])
            return self.pick(
                [
                    (f"UPPER({ref})", t),
                    (f"CONCAT({ref}, '|', {rel.ref(other.name)})", t),
                    (f"COALESCE({ref}, 'none')", t),
                    (f"LENGTH({ref})", "int"),
                ]
            )
        if t == "date":
            return self.pick(
                [(f"DATE_ADD({ref}, 3)", t), (f"MONTH({ref})", "int"), (f"DATEDIFF({ref}, DATE '2024-01-01')", "int")]
            )
        return ref, t

    def aggregate(self, rel: Rel, allow_distinct: bool = True) -> tuple[str, str]:
        """(an aggregate over the relation, its type family)."""
        numeric = [c for c in rel.columns if c.type in NUMERIC]
        col = self.pick(numeric) if numeric and self.chance(0.85) else self.pick(rel.columns)
        ref = rel.ref(col.name)
        choices = [
            ("COUNT(*)", "bigint"),
            (f"COUNT({ref})", "bigint"),
            (f"MIN({ref})", col.type),
            (f"MAX({ref})", col.type),
        ]
        if col.type in NUMERIC:
            choices += [(f"SUM({ref})", col.type), (f"AVG({ref})", "double"), (f"SUM({ref})", col.type)]
        if allow_distinct:
            choices += [(f"COUNT(DISTINCT {ref})", "bigint")]
            if col.type in NUMERIC and self.chance(0.3):
                choices += [(f"SUM(DISTINCT {ref})", col.type), (f"AVG(DISTINCT {ref})", "double")]
        return self.pick(choices)

    # -- relations --------------------------------------------------------------------------
    def relation(self, table: str, derived: float = 0.2) -> Rel:
        """A table, or sometimes a derived table or CTE over it (filtered projection or aggregate)."""
        if not self.chance(derived):
            return self.table(table)
        inner = self.table(table, alias=ALIAS_OF[table] + "_in")
        alias = self.alias(table)
        rel = self._derived(table, inner, alias)
        if self.chance(0.35):  # the same body as a CTE the block names
            name = f"w{len(self._ctes) + 1}_{table}"
            self._ctes.append(f"{name} AS {rel.source}")
            rel.source = name
        return rel

    def _derived(self, table: str, inner: Rel, alias: str) -> Rel:
        if self.chance(0.5) and inner.keys():
            keys = self.rng.sample(inner.keys(), min(len(inner.keys()), self.rng.randint(1, 2)))
            aggs = []
            columns = []
            for key in keys:
                columns.append(Col(key.name, key.type, key.domain, Counter({v: 1 for v in key.freq})))
            for i in range(self.rng.randint(1, 2)):
                text, t = self.aggregate(inner)
                name = f"a{i}"
                aggs.append(f"{text} AS {name}")
                columns.append(Col(name, t, None, Counter()))
            where = self.filters([inner], self.rng.randint(0, 1))
            groups = ", ".join(inner.ref(k.name) for k in keys)
            sql = (
                f"(SELECT {', '.join(inner.ref(k.name) for k in keys)}, {', '.join(aggs)} FROM {inner.source} "
                f"AS {inner.alias}"
                f"{' WHERE ' + ' AND '.join(where) if where else ''} GROUP BY {groups})"
            )
            rows = min(len(self.data.rows[table]), max(len(k.freq) for k in keys) * (3 if len(keys) > 1 else 1))
            return Rel(alias, sql, columns, rows)
        chosen = [c for c in inner.columns if c.domain or self.chance(0.5)]
        where = self.filters([inner], self.rng.randint(0, 2))
        sql = (
            f"(SELECT {', '.join(inner.ref(c.name) for c in chosen)} FROM {inner.source} AS {inner.alias}"
            f"{' WHERE ' + ' AND '.join(where) if where else ''})"
        )
        return Rel(alias, sql, [Col(c.name, c.type, c.domain, c.freq) for c in chosen], inner.rows)

    # -- join blocks ------------------------------------------------------------------------
    @staticmethod
    def selectivity(a: Col, b: Col, rows_a: float, rows_b: float) -> float:
        if not rows_a or not rows_b:
            return 0.0
        matched = sum(n * b.freq.get(v, 0) for v, n in a.freq.items())
        return matched / (rows_a * rows_b)

    def edges_between(self, a: Rel, b: Rel) -> list[tuple[Col, Col]]:
        return [(x, y) for x in a.keys() for y in b.keys() if x.domain == y.domain]

    def choose_tables(self, n: int, shape: str) -> list[str]:
        """n table names for a star (a fact and dimensions) or a chain; at most two hot tables."""
        facts = ["fact", "fact2", "part_f", "lines", "orders"]
        if shape == "star":
            center = self.pick(facts, [4, 3, 2, 1, 1])
            others = [self.pick(DIMENSIONS + ("orders",)) for _ in range(n - 1)]
            chosen = [center] + others
        else:
            pool = list(TABLES)
            chosen = [self.pick(pool) for _ in range(n)]
        while sum(t in HOT_TABLES for t in chosen) > 2:
            i = next(i for i, t in enumerate(chosen) if t in HOT_TABLES)
            chosen[i] = self.pick(DIMENSIONS)
        return chosen

    def connect(self, rels: list[Rel], shape: str) -> list[tuple[int, int, Col, Col]]:
        """Tree edges (i, j, col of i, col of j) over the relations; a few extra ones (cycles)."""
        edges = []
        for j in range(1, len(rels)):
            if shape == "star":
                candidates = [0] + list(range(1, j))
                order = (
                    [0] + self.rng.sample(candidates[1:], len(candidates) - 1)
                    if self.chance(0.8)
                    else self.rng.sample(candidates, len(candidates))
                )
            else:
                order = (
                    [j - 1] + self.rng.sample(range(j - 1), j - 1) if self.chance(0.8) else self.rng.sample(range(j), j)
                )
            for i in order:
                pairs = self.edges_between(rels[i], rels[j])
                if pairs:
                    x, y = self.pick(pairs)
                    edges.append((i, j, x, y))
                    others = [(a, b) for a, b in pairs if a.domain != x.domain]
                    if others and self.chance(0.12):  # a composite key
                        a, b = self.pick(others)
                        edges.append((i, j, a, b))
                    break
            else:
                raise Rejected("no key shared")
        if len(rels) > 2 and self.chance(0.15):
            i, j = sorted(self.rng.sample(range(len(rels)), 2))
            pairs = self.edges_between(rels[i], rels[j])
            if pairs:
                x, y = self.pick(pairs)
                edges.append((i, j, x, y))
        return edges

    def estimate(self, steps: list[Step], edges) -> float:
        placed: list[Rel] = []
        rows = 0.0
        for step in steps:
            rel = step.rel
            if not placed:
                rows = rel.rows
                placed.append(rel)
                continue
            sel = 1.0
            inner = rows * rel.rows
            for ra, rb, x, y in step_edges(step, placed, edges):
                sel *= self.selectivity(x, y, ra.rows, rb.rows)
            inner *= sel
            kind = step.kind
            if kind.startswith("LEFT SEMI") or kind.startswith("LEFT ANTI"):
                rows = rows
            elif kind.startswith("LEFT"):
                rows = max(inner, rows)
            elif kind.startswith("RIGHT"):
                rows = max(inner, rel.rows)
            elif kind.startswith("FULL"):
                rows = inner + rows + rel.rows
            else:
                rows = inner
            placed.append(rel)
        return rows

    def join_block(
        self, rels: list[Rel], shape: str, edges=None, comma: bool | None = None, outer: float = 0.25
    ) -> tuple[str, list[Rel], list[str]]:
        """(FROM clause text, the relations visible after it, WHERE conjuncts it needs)."""
        edges = edges if edges is not None else self.connect(rels, shape)
        adjacency = {i: set() for i in range(len(rels))}
        for i, j, _, _ in edges:
            adjacency[i].add(j)
            adjacency[j].add(i)
        # A random written order: mostly each relation joins one already placed. Sometimes the
        # biggest relations first (the order a join reorder exists for).
        big_first = self.chance(0.2)
        order = [max(range(len(rels)), key=lambda i: rels[i].rows) if big_first else self.rng.randrange(len(rels))]
        while len(order) < len(rels):
            rest = [i for i in range(len(rels)) if i not in order]
            linked = [i for i in rest if adjacency[i] & set(order)]
            if big_first and linked:
                order.append(max(linked, key=lambda i: rels[i].rows))
                continue
            order.append(self.pick(linked) if linked and not self.chance(0.08) else self.pick(rest))
        comma = self.chance(0.15) if comma is None else comma
        steps: list[Step] = []
        where: list[str] = []
        invisible: set = set()
        for position, index in enumerate(order):
            rel = rels[index]
            if position == 0:
                steps.append(Step(rel, ""))
                continue
            placed = set(order[:position])
            conds = []
            for i, j, x, y in edges:
                if {i, j} <= placed | {index} and index in (i, j):
                    other = j if i == index else i
                    if other in placed:
                        a = rels[i].ref(x.name)
                        b = rels[j].ref(y.name)
                        conds.append(f"{a} = {b}" if self.chance(0.5) else f"{b} = {a}")
            if any(rels[o].alias in invisible for o in placed if o in adjacency[index] and o in placed):
                raise Rejected("an edge to a semi/anti-joined relation")
            if comma:
                steps.append(Step(rel, ","))
                if conds and self.chance(0.25):  # TPC-H Q19: the keys repeated in each branch of an OR
                    keys = " AND ".join(conds)
                    near = [rel, *(rels[o] for o in placed)]
                    branches = [f"({keys} AND {self.predicate(self.pick(near))})" for _ in range(2)]
                    where.append(f"({' OR '.join(branches)})")
                else:
                    where += conds
                continue
            if not conds:  # joined later (a comma here would end the join chain its ON clauses read)
                steps.append(Step(rel, self.pick(["CROSS JOIN", "JOIN"])))
                if steps[-1].kind == "JOIN":
                    steps[-1].on = ["1 = 1"]
                continue
            later = [o for o in adjacency[index] if o not in placed]
            kinds = ["JOIN", "INNER JOIN"]
            weights = [6, 1]
            if self.chance(outer):
                kinds += ["LEFT JOIN", "LEFT OUTER JOIN", "RIGHT JOIN", "FULL OUTER JOIN"]
                weights += [4, 1, 2, 2]
                if not later:
                    kinds += ["LEFT SEMI JOIN", "LEFT ANTI JOIN"]
                    weights += [2, 2]
            kind = self.pick(kinds, weights)
            if "SEMI" in kind or "ANTI" in kind:
                invisible.add(rel.alias)
            on = conds
            if self.chance(0.2):
                on = on + [self.predicate(rel)]
            if kind in ("JOIN", "INNER JOIN") and self.chance(0.12):  # a non-equi condition in ON
                visible = [rels[o] for o in placed if rels[o].alias not in invisible]
                p = self.cross_predicate([rel, self.pick(visible)])
                if p:
                    on = on + [p]
            if "OUTER" in kind or "LEFT" in kind or "RIGHT" in kind or "FULL" in kind:
                if self.chance(0.2):
                    visible = [rels[o] for o in placed if rels[o].alias not in invisible]
                    on = on + [self.predicate(self.pick(visible))]
            steps.append(Step(rel, kind, on))
        if self.estimate(steps, [(rels[i], rels[j], x, y) for i, j, x, y in edges]) > MAX_ROWS:
            raise Rejected("too many rows")
        parts = []
        for step in steps:
            item = (
                f"{step.rel.source} AS {step.rel.alias}" if self.chance(0.8) else f"{step.rel.source} {step.rel.alias}"
            )
            if not step.kind:
                parts.append(item)
            elif step.kind == ",":
                parts.append(f", {item}")
            elif step.on:
                parts.append(f" {step.kind} {item} ON {' AND '.join(step.on)}")
            else:
                parts.append(f" {step.kind} {item}")
        visible = [r for r in rels if r.alias not in invisible]
        return "".join(parts), visible, where

    # -- SELECT lists -----------------------------------------------------------------------
    def select_block(
        self,
        from_sql: str,
        visible: list[Rel],
        where: list[str],
        mode: str | None = None,
        hint: str = "",
        filters: Sequence[float] = (3, 4, 2, 1),
    ) -> tuple[str, list[tuple[str, str]]]:
        """A whole SELECT over a FROM clause: (sql, [(output name, type)]); `filters`: weights of
        adding 0, 1, 2 or 3 filters of its own."""
        mode = mode or self.pick(["plain", "group", "distinct", "window"], [5, 4, 1, 1.5])
        where = where + self.filters(visible, self.pick([0, 1, 2, 3], filters))
        if self.chance(0.1):
            p = self.cross_predicate(visible)
            if p:
                where.append(p)
        outputs: list[tuple[str, str]] = []
        items: list[str] = []
        group: list[str] = []
        having = ""
        if mode == "group":
            for _ in range(self.pick([0, 1, 1, 2, 3])):
                rel = self.pick(visible)
                if self.chance(0.3):
                    text, t = self.expression(rel)
                else:
                    c = self.pick(rel.columns)
                    text, t = rel.ref(c.name), c.type
                if text in group:
                    continue
                group.append(text)
                name = self.out_name("key")
                items.append(f"{text} AS {name}")
                outputs.append((name, t))
            for _ in range(self.rng.randint(1, 3)):
                text, t = self.aggregate(self.pick(visible))
                name = self.out_name("agg")
                items.append(f"{text} AS {name}")
                outputs.append((name, t))
            if self.chance(0.3):
                rel = self.pick(visible)
                numeric = [c for c in rel.columns if c.type in NUMERIC]
                text = (
                    f"{self.pick(['SUM', 'MIN', 'MAX', 'COUNT'])}({rel.ref(self.pick(numeric).name)})"
                    if numeric
                    else "COUNT(*)"
                )
                having = f" HAVING {text} {self.pick(['>', '>=', '<'])} {self.rng.randint(0, 20)}"
        else:
            for _ in range(self.rng.randint(1, 6)):
                rel = self.pick(visible)
                text, t = self.expression(rel)
                name = self.out_name(text.split(".")[-1].split(" ")[0] if text.startswith(rel.alias + ".") else "e")
                items.append(f"{text} AS {name}")
                outputs.append((name, t))
            if mode == "window":
                rel = self.pick(visible)
                part = rel.ref(self.pick(rel.columns).name)
                m = self.pick(rel.measures()) if rel.measures() else self.pick(rel.columns)
                order_col = rel.ref(self.pick(rel.columns).name)
                text = self.pick(
                    [
                        f"SUM({rel.ref(m.name)}) OVER (PARTITION BY {part})",
                        f"COUNT(*) OVER (PARTITION BY {part})",
                        f"MAX({rel.ref(m.name)}) OVER (PARTITION BY {part})",
                        f"RANK() OVER (PARTITION BY {part} ORDER BY {order_col})",
                        f"DENSE_RANK() OVER (ORDER BY {order_col} DESC)",
                        f"COUNT({rel.ref(m.name)}) OVER (PARTITION BY {part} ORDER BY {order_col})",
                    ]
                )
                name = self.out_name("w")
                items.append(f"{text} AS {name}")
                outputs.append((name, "bigint"))
        distinct = "DISTINCT " if mode == "distinct" else ""
        sql = f"SELECT {hint}{distinct}{', '.join(items)} FROM {from_sql}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if group:
            sql += " GROUP BY " + ", ".join(group)
        sql += having
        sql += self.order_limit([n for n, _ in outputs])
        return sql, outputs

    def order_limit(self, names: list[str]) -> str:
        r = self.rng.random()
        if r < 0.15:
            keys = self.rng.sample(names, len(names))
            text = ", ".join(f"{k}{self.pick(['', ' DESC', ' ASC NULLS LAST', ' DESC NULLS FIRST'])}" for k in keys)
            return f" ORDER BY {text} LIMIT {self.rng.randint(1, 40)}"
        if r < 0.2:
            return f" ORDER BY {', '.join(names)}"
        return ""

    # -- shapes -----------------------------------------------------------------------------
    def query(self) -> Query:
        """One random query (draws again when a shape's draw is rejected)."""
        for _ in range(50):
            self._reset()
            shape = self.pick(list(SHAPES), list(SHAPES.values()))
            try:
                sql = getattr(self, f"shape_{shape}")()
            except Rejected:
                continue
            if self._ctes:
                ctes = ", ".join(self._ctes)
                sql = f"WITH {ctes}, {sql[5:]}" if sql.startswith("WITH ") else f"WITH {ctes} {sql}"
            return Query(sql, shape, deterministic=shape != "nondeterministic")
        raise RuntimeError("the generator rejected 50 draws in a row")

    def shape_join(self) -> str:
        shape = self.pick(["star", "chain"])
        n = self.pick([2, 3, 4, 5, 6, 7, 8], [2, 4, 4, 3, 2, 1, 1])
        rels = [self.relation(t) for t in self.choose_tables(n, shape)]
        from_sql, visible, where = self.join_block(rels, shape)
        hint = ""
        if self.chance(0.05):
            hint = f"/*+ {self.pick(['BROADCAST', 'MERGE', 'SHUFFLE_HASH'])}({self.pick(rels).alias}) */ "
        elif self.chance(0.03):
            hint = "/*+ REPARTITION(3) */ "
        sql, _ = self.select_block(from_sql, visible, where, hint=hint)
        if self.chance(0.15):
            sql = self.with_cte_wrapper(sql)
        return sql

    def with_cte_wrapper(self, sql: str) -> str:
        """The block as a CTE read by an outer SELECT * (names kept)."""
        return f"WITH body AS ({sql}) SELECT * FROM body"

    def join_cte(self) -> tuple[str, str, list[Col], str, str]:
        """A CTE that aggregates a join by its join key (the input merge_correlated_aggregates
        fires on): (definition, name, output columns, the key column, a second grouping column)."""
        variant = self.pick(["orders", "fact_dim", "fact2_fact", "fact_dim_g"])
        name = self.pick(["totals", "t_agg", "ototals"])
        m = self.pick(["SUM", "SUM", "AVG", "MAX", "COUNT"])
        if variant == "orders":
            key_side = self.pick(["o.order_id", "l.order_id"])
            measure = self.pick(["l.amt", "l.v", "l.q"])
            extra = self.pick(["o.k", "o.g", "o.dt", "o.s"])
            where = self.pick(["", "", f" WHERE l.q > {self.rng.randint(0, 20)}", " WHERE o.g <> 3"])
            body = (
                f"SELECT {key_side} AS order_id, {extra} AS grp, {m}({measure}) AS total FROM fuzz.lines l "
                f"JOIN fuzz.orders o ON l.order_id = o.order_id{where} GROUP BY {key_side}, {extra}"
            )
            grp_col = self.data.frequencies["orders"][extra.split(".")[1]]
            key = Col("order_id", "bigint", "ID", Counter({v: 1 for v in self.data.frequencies["orders"]["order_id"]}))
            grp = Col(
                "grp",
                dict(k="int", g="int", dt="date", s="string")[extra.split(".")[1]],
                {"o.k": "K", "o.g": "G", "o.dt": "D", "o.s": "S"}[extra],
                Counter({v: 2 for v in grp_col}),
            )
            total_type = (
                "double"
                if m == "AVG" or measure == "l.v"
                else "bigint"
                if m == "COUNT"
                else "decimal(22,2)"
                if measure == "l.amt"
                else "bigint"
            )
        elif variant in ("fact_dim", "fact_dim_g"):
            key_side = self.pick(["f.k", "d.k"])
            extra = "d.g" if variant == "fact_dim_g" else self.pick(["d.name", "d.g", "d.r"])
            measure = self.pick(["f.amt", "f.v", "f.q"])
            body = (
                f"SELECT {key_side} AS kk, {extra} AS grp, {m}({measure}) AS total FROM fuzz.fact f JOIN fuzz.dim_k d "
                f"ON f.k = d.k GROUP BY {key_side}, {extra}"
            )
            key = Col("kk", "int", "K", Counter({v: 1 for v in self.data.frequencies["dim_k"]["k"]}))
            gt = "string" if extra == "d.name" else "int"
            grp = Col(
                "grp",
                gt,
                "G" if extra == "d.g" else None,
                Counter({v: 3 for v in self.data.frequencies["dim_k"][extra[2:]]}),
            )
            total_type = (
                "double"
                if m == "AVG" or measure == "f.v"
                else "bigint"
                if m == "COUNT"
                else "decimal(22,2)"
                if measure == "f.amt"
                else "bigint"
            )
        else:
            body = (
                f"SELECT f.id AS fid, f.k AS grp, {m}(g.{self.pick(['amt', 'v', 'q'])}) AS total FROM fuzz.fact2 g "
                f"JOIN fuzz.fact f ON g.fact_id = f.id GROUP BY f.id, f.k"
            )
            key = Col("fid", "bigint", "ID", Counter({v: 1 for v in self.data.frequencies["fact"]["id"]}))
            grp = Col("grp", "int", "K", Counter(self.data.frequencies["fact"]["k"]))
            total_type = "double"
        cols = [key, grp, Col("total", total_type, None, Counter())]
        return f"{name} AS ({body})", name, cols, key.name, grp.name

    def source_for_correlation(self) -> tuple[str | None, str, list[Col], list[str]]:
        """(CTE definition or None, the relation's source text, its columns, candidate keys)."""
        if self.chance(0.8):
            cte, name, cols, key, grp = self.join_cte()
            return cte, name, cols, [grp, grp, key]
        table = self.pick(["fact", "fact2", "lines", "part_f", "orders"])
        rel = self.table(table, alias="xs")
        keys = [c.name for c in rel.keys()]
        if self.chance(0.3):
            where = rename(self.filters([rel], 1)[0], "xs", "")
            cte = f"src AS (SELECT * FROM {rel.source} WHERE {where})"
            return cte, "src", rel.columns, keys
        return None, rel.source, rel.columns, keys

    def shape_joined_back(self) -> str:
        cte, source, cols, keys = self.source_for_correlation()
        key = self.pick(keys)
        key_col = next(c for c in cols if c.name == key)
        measures = [c for c in cols if c.type in NUMERIC and c.name != key] or [c for c in cols if c.name != key]
        m = self.pick(measures)
        filt_rel = Rel("o", source, cols, 100)
        inner_filters = [rename(p, "o", "i") for p in self.filters([filt_rel], self.pick([0, 0, 1]))]
        aggs = []
        agg_names = []
        for i in range(self.pick([1, 1, 2])):
            fn = self.pick(["AVG", "SUM", "MIN", "MAX", "COUNT"], [4, 3, 2, 2, 1])
            arg = f"i.{m.name}" if self.chance(0.85) or fn in ("AVG", "SUM") else f"i.{self.pick(cols).name}"
            if fn == "COUNT" and self.chance(0.3):
                arg = "*"
            if self.chance(0.06):
                arg = f"DISTINCT {arg}" if arg != "*" else arg
            agg_names.append(f"a{i}")
            aggs.append(f"{fn}({arg}) AS a{i}")
        second_key = None
        if self.chance(0.1):
            second_key = self.pick([c.name for c in cols if c.name not in (key, m.name)])
        group = f"i.{key}" + (f", i.{second_key}" if second_key else "")
        inner = f"SELECT {group}, {', '.join(aggs)} FROM {source} i"
        if inner_filters:
            inner += " WHERE " + " AND ".join(inner_filters)
        inner += f" GROUP BY {group}"
        if self.chance(0.04):
            inner += f" HAVING COUNT(*) > {self.rng.randint(0, 3)}"
        outer_filters = [rename(p, "i", "o") for p in inner_filters]
        if self.chance(0.3):
            outer_filters = self.filters([filt_rel], 1) + (outer_filters if self.chance(0.5) else [])
        if self.chance(0.2):
            outer_filters.append(self.predicate(filt_rel, key_col))
        on = [f"s.{key} = o.{key}"]
        if second_key and self.chance(0.6):
            on.append(f"s.{second_key} = o.{second_key}")
        join = self.pick(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", ","], [6, 3, 2, 0.5, 1])
        compare = self.chance(0.6)
        agg_cmp = f"o.{m.name} {self.pick(['>', '<', '>=', '='])} s.{agg_names[0]}"
        compare = compare and f"i.{m.name})" in aggs[0] and "DISTINCT" not in aggs[0]
        dim = None
        if self.chance(0.2) and key_col.domain:
            dims = [t for t in DIMENSIONS if any(c.domain == key_col.domain for c in TABLES[t])]
            if dims:
                dim = self.table(self.pick(dims), alias="d")
        if join == ",":
            from_sql = f"({inner}) s, {source} o"
            where = on + outer_filters + ([agg_cmp] if compare else [])
        elif join == "LEFT JOIN":
            # in ON only where the aggregate is of the compared column (MAX of a string against a
            # double fails to cast under ANSI: seed 12, case 1337)
            if self.chance(0.2) and f"i.{m.name})" in aggs[0]:
                on.append(agg_cmp)
                compare = False
            from_sql = f"{source} o LEFT JOIN ({inner}) s ON {' AND '.join(on)}"
            where = outer_filters + ([agg_cmp] if compare else [])
        elif join == "RIGHT JOIN":
            from_sql = f"({inner}) s RIGHT JOIN {source} o ON {' AND '.join(on)}"
            where = outer_filters + ([agg_cmp] if compare else [])
        else:
            first, second = (f"({inner}) s", f"{source} o") if self.chance(0.5) else (f"{source} o", f"({inner}) s")
            from_sql = f"{first} {join} {second} ON {' AND '.join(on)}"
            where = outer_filters + ([agg_cmp] if compare else [])
        if dim is not None:
            dcol = next(c for c in dim.columns if c.domain == key_col.domain)
            from_sql += f" JOIN {dim.source} d ON d.{dcol.name} = o.{key}"
        out_cols = self.rng.sample(cols, min(len(cols), self.rng.randint(1, 3)))
        items = [f"o.{c.name} AS {self.out_name(c.name)}" for c in out_cols]
        items += [f"s.{a} AS {self.out_name('agg')}" for a in agg_names if self.chance(0.7)]
        if dim is not None and self.chance(0.5):
            items.append(f"d.{self.pick(dim.columns).name} AS {self.out_name('d')}")
        if self.chance(0.25):  # the outer block aggregates (Hive example 1)
            items = [f"s.{key} AS {self.out_name('key')}", f"COUNT(*) AS {self.out_name('n')}"]
            tail = f" GROUP BY s.{key}"
        else:
            tail = ""
        sql = f"SELECT {', '.join(items)} FROM {from_sql}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += tail
        return (f"WITH {cte} " if cte else "") + sql

    def shape_correlated(self) -> str:
        variant = self.pick(["q1", "q17", "q2", "self", "exists", "in_having", "exists_window"], [6, 3, 2, 2, 1, 3, 3])
        fn = self.pick(["AVG", "MIN", "MAX", "SUM", "COUNT"], [5, 3, 3, 2, 1])
        op = self.pick(["<", ">", "=", ">=", "<="])
        factor = self.pick(["", "0.2 * ", "1.2 * ", "2 * "])
        where_place = self.chance(0.9)
        if variant == "q1":
            cte, name, cols, key, grp = self.join_cte()
            corr = self.pick([grp, grp, key])
            shared = []
            rel = Rel("t1", name, cols, 100)
            if self.chance(0.3):
                shared = self.filters([rel], 1)
            extra = []
            if self.chance(0.25):
                extra = [self.predicate(rel, next(c for c in cols if c.name == corr))]
            elif self.chance(0.15):
                extra = self.filters([rel], 1)
            sub_filters = [rename(p, "t1", "t2") for p in shared]
            if self.chance(0.1):
                sub_filters += [rename(p, "t1", "t2") for p in self.filters([rel], 1)]
            numeric = [c.name for c in cols if c.type in NUMERIC]
            arg = (
                self.pick(["t2.total", "t2.total", f"t2.{self.pick(numeric)}"])
                if fn != "COUNT"
                else self.pick(["*", "t2.total"])
            )
            sub = (
                f"(SELECT {factor}{fn}({arg}) FROM {name} t2 WHERE "
                + " AND ".join(sub_filters + [f"t2.{corr} = t1.{corr}"])
                + ")"
            )
            items = [f"t1.{c.name} AS {self.out_name(c.name)}" for c in self.rng.sample(cols, self.rng.randint(1, 3))]
            cmp = f"t1.total {op} {sub}"
            if where_place:
                sql = f"SELECT {', '.join(items)} FROM {name} t1 WHERE " + " AND ".join(shared + extra + [cmp])
            else:
                sql = f"SELECT {', '.join(items)}, {sub} AS {self.out_name('sub')} FROM {name} t1" + (
                    " WHERE " + " AND ".join(shared + extra) if shared + extra else ""
                )
            return f"WITH {cte} {sql}"
        if variant in ("q17", "q2", "self"):
            table = self.pick(["fact", "fact2", "lines", "part_f"]) if variant != "q2" else self.pick(["fact", "fact2"])
            t = self.table(table, alias="xo")
            key = self.pick(t.keys())
            measure = self.pick([c for c in t.columns if c.type in NUMERIC and c.name != key.name])
            arg = f"xi.{measure.name}" if fn != "COUNT" else self.pick(["*", f"xi.{measure.name}"])
            if variant == "self":
                shared = self.filters([Rel("xo", t.source, t.columns, 1)], self.pick([0, 1]))
                sub_filters = [rename(p, "xo", "xi") for p in shared]
                if self.chance(0.15):
                    sub_filters += [rename(p, "xo", "xi") for p in self.filters([Rel("xo", t.source, t.columns, 1)], 1)]
                sub = (
                    f"(SELECT {factor}{fn}({arg}) FROM {t.source} xi WHERE "
                    + " AND ".join(sub_filters + [f"xi.{key.name} = xo.{key.name}"])
                    + ")"
                )
                items = [
                    f"xo.{c.name} AS {self.out_name(c.name)}"
                    for c in self.rng.sample(t.columns, self.rng.randint(1, 3))
                ]
                where = shared + [f"xo.{measure.name} {op} {sub}"]
                return f"SELECT {', '.join(items)} FROM {t.source} xo WHERE {' AND '.join(where)}"
            dims = [d for d in DIMENSIONS if any(c.domain == key.domain for c in TABLES[d])]
            if not dims:
                raise Rejected("no dimension for the key")
            dim = self.table(self.pick(dims), alias="d")
            dkey = next(c for c in dim.columns if c.domain == key.domain)
            dfilters = self.filters([dim], self.pick([1, 1, 2]))
            joins_sql = f"{t.source} xo, {dim.source} d" if self.chance(0.6) else f"{dim.source} d, {t.source} xo"
            where = [f"d.{dkey.name} = xo.{key.name}"] + dfilters
            sub_from = f"{t.source} xi"
            sub_where = [f"xi.{key.name} = d.{dkey.name}" if self.chance(0.7) else f"xi.{key.name} = xo.{key.name}"]
            if variant == "q2":
                # the subquery joins a second relation that the outer block joins too, with the same filter
                other = self.table("dim_s", alias="e")
                filt = self.predicate(other)
                joins_sql += f", {other.source} e"
                where += ["xo.s = e.s", filt]
                sub_from += f", {other.source} e2"
                sub_where += [
                    "xi.s = e2.s",
                    rename(filt, "e", "e2")
                    if self.chance(0.85)
                    else self.predicate(Rel("e2", other.source, other.columns, 1)),
                ]
            sub = f"(SELECT {factor}{fn}({arg}) FROM {sub_from} WHERE {' AND '.join(sub_where)})"
            if where_place:
                where.append(f"xo.{measure.name} {op} {sub}")
            if self.chance(0.4):
                items = [f"SUM(xo.{measure.name}) AS {self.out_name('total')}"]
                if self.chance(0.5):
                    items.append(f"COUNT(*) AS {self.out_name('n')}")
            else:
                items = [
                    f"xo.{c.name} AS {self.out_name(c.name)}"
                    for c in self.rng.sample(t.columns, self.rng.randint(1, 3))
                ]
                items.append(f"d.{self.pick(dim.columns).name} AS {self.out_name('d')}")
                if not where_place:
                    items.append(f"{sub} AS {self.out_name('sub')}")
                if self.chance(0.2):
                    names = [i.rsplit(" AS ", 1)[1] for i in items]
                    return f"SELECT {', '.join(items)} FROM {joins_sql} WHERE {' AND '.join(where)}" + self.order_limit(
                        names
                    )
            return f"SELECT {', '.join(items)} FROM {joins_sql} WHERE {' AND '.join(where)}"
        if variant == "exists":  # near misses: EXISTS / IN subqueries over the same table
            table = self.pick(["fact", "fact2", "lines", "part_f"])
            t = self.table(table, alias="xo")
            key = self.pick(t.keys())
            inner = Rel("xi", t.source, t.columns, 1)
            filt = self.predicate(inner)
            if self.chance(0.5):
                cond = (
                    f"{'NOT ' if self.chance(0.3) else ''}EXISTS (SELECT 1 FROM {t.source} xi "
                    f"WHERE xi.{key.name} = xo.{key.name} AND {filt})"
                )
            else:
                cond = (
                    f"xo.{key.name} {'NOT ' if self.chance(0.3) else ''}IN "
                    f"(SELECT xi.{key.name} FROM {t.source} xi WHERE {filt})"
                )
            items = [
                f"xo.{c.name} AS {self.out_name(c.name)}" for c in self.rng.sample(t.columns, self.rng.randint(1, 3))
            ]
            return f"SELECT {', '.join(items)} FROM {t.source} xo WHERE {cond}"
        if variant == "in_having":
            return self.in_having()
        if variant == "exists_window":
            return self.exists_window()
        raise Rejected("unknown variant")

    def key_partner(self, t: Rel, key: Col, share: float, left_share: float, weights: list[int]):
        """(dimension or None, FROM text, WHERE conjuncts, the key's column to correlate on): t as
        `xo`, joined (with chance `share`) to a dimension `d` on its key by a comma join, JOIN ... ON
        or (with chance `left_share`, a near miss) LEFT JOIN; the key then d's or xo's by `weights`."""
        dims = [d for d in DIMENSIONS if any(c.domain == key.domain for c in TABLES[d])] if key.domain else []
        where, from_sql, ref = [], f"{t.source} xo", f"xo.{key.name}"
        if not (dims and self.chance(share)):
            return None, from_sql, where, ref
        dim = self.table(self.pick(dims), alias="d")
        dkey = next(c for c in dim.columns if c.domain == key.domain)
        if left_share and self.chance(left_share):
            from_sql += f" LEFT JOIN {dim.source} d ON d.{dkey.name} = xo.{key.name}"
        elif self.chance(0.5):
            from_sql += f", {dim.source} d"
            where.append(f"d.{dkey.name} = xo.{key.name}")
        else:
            from_sql += f" JOIN {dim.source} d ON d.{dkey.name} = xo.{key.name}"
        return dim, from_sql, where, self.pick([f"d.{dkey.name}", f"xo.{key.name}"], weights)

    def exists_window(self) -> str:
        """TPC-H Q21: EXISTS and NOT EXISTS over the relation the outer block reads, on its key
        (directly, or through a relation equated to it), with a <> on another column and filters
        of their own; and near misses (a range, <> across columns and types, under OR, a LEFT JOIN,
        a second key)."""
        table = self.pick(["fact", "fact2", "lines", "part_f", "orders"])
        t = self.table(table, alias="xo")
        key = self.pick(t.keys())
        others = [c for c in t.columns if c.name != key.name]
        dim, from_sql, where, outer_key = self.key_partner(t, key, 0.4, left_share=0.1, weights=[2, 1])
        for i in range(self.pick([1, 1, 2, 2, 3])):
            a = f"x{i}"
            inner = Rel(a, t.source, t.columns, 1)
            parts = [f"{a}.{key.name} = {outer_key}"]
            column = self.pick(others)
            if self.chance(0.7):
                # another column of a comparable type sometimes (across types: a near miss)
                comparable = [c for c in others if c.type == column.type or {c.type, column.type} <= set(NUMERIC)]
                other = column if self.chance(0.85) else self.pick(comparable)
                parts.append(f"{a}.{column.name} <> xo.{other.name}")
            for _ in range(self.pick([0, 1, 1, 2])):
                parts.append(self.predicate(inner))
            if self.chance(0.05):
                parts.append(f"{a}.{column.name} > xo.{column.name}")
            if self.chance(0.05):
                second = self.pick(others)
                parts.append(f"{a}.{second.name} = xo.{second.name}")
            self.rng.shuffle(parts)
            negated = "NOT " if self.chance(0.45) else ""
            selected = self.pick(["*", "1", f"{a}.{column.name}"])
            where.append(f"{negated}EXISTS (SELECT {selected} FROM {t.source} {a} WHERE {' AND '.join(parts)})")
        if self.chance(0.4):
            where.append(self.predicate(Rel("xo", t.source, t.columns, 1)))
        if self.chance(0.08):
            where[-1] = f"({where[-1]} OR {self.predicate(Rel('xo', t.source, t.columns, 1))})"
        self.rng.shuffle(where)
        if self.chance(0.5):
            group = self.pick([c for c in t.columns])
            items = [f"xo.{group.name} AS {self.out_name('g')}", f"COUNT(*) AS {self.out_name('n')}"]
            return f"SELECT {', '.join(items)} FROM {from_sql} WHERE {' AND '.join(where)} GROUP BY xo.{group.name}"
        items = [f"xo.{c.name} AS {self.out_name(c.name)}" for c in self.rng.sample(t.columns, self.rng.randint(1, 3))]
        if dim is not None and self.chance(0.5):
            items.append(f"d.{self.pick(dim.columns).name} AS {self.out_name('d')}")
        return f"SELECT {', '.join(items)} FROM {from_sql} WHERE {' AND '.join(where)}"

    def in_having(self) -> str:
        """TPC-H Q18: an IN subquery keeping the keys of an aggregate of a relation by HAVING, the
        relation joined back on its key (directly, or through a relation equated to it); and its
        near misses (NOT IN, under OR, the aggregate filtered, DISTINCT, the input filtered)."""
        table = self.pick(["fact", "fact2", "lines", "part_f", "orders"])
        t = self.table(table, alias="xo")
        key = self.pick(t.keys())
        numeric = [c for c in t.columns if c.type in NUMERIC and c.name != key.name]
        inner = Rel("xi", t.source, t.columns, 1)
        having = []
        for _ in range(self.pick([1, 1, 2])):
            fn = self.pick(["COUNT", "SUM", "MIN", "MAX", "AVG"], [3, 3, 2, 2, 2])
            if fn == "COUNT" or not numeric:
                arg = "*" if self.chance(0.7) else f"xi.{self.pick(t.columns).name}"
                if self.chance(0.05):
                    arg = f"DISTINCT xi.{self.pick(t.columns).name}"
                having.append(f"COUNT({arg}) {self.pick(['>', '>=', '='])} {self.rng.randint(0, 4)}")
            else:
                m = self.pick(numeric)
                bound = lit(self.value(m), m.type)
                having.append(f"{fn}(xi.{m.name}) {self.pick(['>', '<', '>=', '<='])} {bound}")
        if self.chance(0.1):
            having.append(self.predicate(inner, next(c for c in t.columns if c.name == key.name)))
        sub = f"SELECT xi.{key.name} FROM {t.source} xi"
        if self.chance(0.1):
            sub += " WHERE " + self.predicate(inner)
        sub += f" GROUP BY xi.{key.name} HAVING {' AND '.join(having)}"
        dim, from_sql, where, left = self.key_partner(t, key, 0.6, left_share=0.0, weights=[3, 1])
        cond = f"{left} {'NOT ' if self.chance(0.1) else ''}IN ({sub})"
        if self.chance(0.1):
            cond = f"({cond} OR {self.predicate(Rel('xo', t.source, t.columns, 1))})"
        where.append(cond)
        if self.chance(0.2):
            where.append(self.predicate(Rel("xo", t.source, t.columns, 1)))
        if self.chance(0.5):
            measure = self.pick(numeric) if numeric else key
            group = f"xo.{key.name}" if dim is None or self.chance(0.5) else f"d.{self.pick(dim.columns).name}"
            items = [f"{group} AS {self.out_name('g')}", f"COUNT(*) AS {self.out_name('n')}"]
            total = f"SUM(xo.{measure.name})" if numeric else f"MAX({group})"
            items.append(f"{total} AS {self.out_name('total')}")
            return f"SELECT {', '.join(items)} FROM {from_sql} WHERE {' AND '.join(where)} GROUP BY {group}"
        items = [f"xo.{c.name} AS {self.out_name(c.name)}" for c in self.rng.sample(t.columns, self.rng.randint(1, 3))]
        if dim is not None and self.chance(0.5):
            items.append(f"d.{self.pick(dim.columns).name} AS {self.out_name('d')}")
        return f"SELECT {', '.join(items)} FROM {from_sql} WHERE {' AND '.join(where)}"

    def sibling_input(self) -> tuple[str, Rel, list[Rel]]:
        """(FROM text of the siblings' common input, a relation to draw filters from, all relations)."""
        if self.chance(0.75):
            table = self.pick(["fact", "fact2", "lines", "part_f", "orders"])
            rel = self.table(table, alias="t")
            return f"{rel.source} t", rel, [rel]
        rel = self.table("fact", alias="t")
        dim = self.table(self.pick(["dim_k", "dim_s", "dim_g"]), alias="d")
        col = next(
            c for c in dim.columns if c.domain in ("K", "S", "G") and any(x.domain == c.domain for x in rel.keys())
        )
        fcol = next(c for c in rel.keys() if c.domain == col.domain)
        return f"{rel.source} t JOIN {dim.source} d ON t.{fcol.name} = d.{col.name}", rel, [rel, dim]

    def range_filter(self, rel: Rel) -> str:
        cols = [c for c in rel.columns if c.type in ("int", "decimal(12,2)", "double", "date")]
        col = self.pick(cols)
        a, b = sorted([self.value(col), self.value(col)])
        if self.chance(0.2):
            return f"({rel.ref(col.name)} BETWEEN {lit(a, col.type)} AND {lit(b, col.type)} OR {self.predicate(rel)})"
        return f"{rel.ref(col.name)} BETWEEN {lit(a, col.type)} AND {lit(b, col.type)}"

    def shape_siblings(self) -> str:
        from_sql, rel, rels = self.sibling_input()
        per_key = self.chance(0.4)
        keys = []
        if per_key:
            keys = [self.pick(rel.keys())]
            if self.chance(0.15):
                others = [c for c in rel.keys() if c.name != keys[0].name]
                if others:
                    keys.append(self.pick(others))
        common = self.filters(rels, 1) if self.chance(0.35) else []
        n = self.pick([2, 2, 3, 4])
        distinct_col = self.pick(rel.columns)
        # At most one near miss per query, in one sibling: a FILTER clause already there, HAVING,
        # LIMIT, a filter not shared, an outer join, a join on part of the keys.
        miss = self.pick([None, "filter", "having", "limit", "unshared", "left", "partial"], [14, 1, 1, 1, 1, 1, 1])
        missing = self.rng.randrange(n)
        blocks, outputs, summed = [], [], set()
        for b in range(n):
            alias = f"b{b + 1}"
            items = [f"t.{k.name}" for k in keys]
            names = []
            for i in range(self.pick([1, 2, 3])):
                if self.chance(0.25):
                    text = f"COUNT(DISTINCT t.{distinct_col.name})" if self.chance(0.8) else self.aggregate(rel)[0]
                else:
                    text, _ = self.aggregate(rels[0] if self.chance(0.8) else self.pick(rels))
                if miss == "filter" and b == missing and i == 0 and not text.startswith("COUNT(DISTINCT"):
                    text = f"{text} FILTER (WHERE {self.predicate(rel)})"
                name = f"{alias}_{self.out_name('a')}"
                items.append(f"{text} AS {name}")
                names.append(name)
                if text.startswith(("AVG(", "SUM(")):
                    summed.add(name)
            own = [self.range_filter(rel)] if self.chance(0.9) else []
            where = common + own
            if miss == "unshared" and b == missing:
                where = self.filters(rels, 1) + own
            sql = f"SELECT {', '.join(items)} FROM {from_sql}"
            if where:
                sql += " WHERE " + " AND ".join(where)
            if keys:
                sql += " GROUP BY " + ", ".join(f"t.{k.name}" for k in keys)
                if miss == "having" and b == missing:
                    sql += " HAVING COUNT(*) > 1"
            if miss == "limit" and b == missing:
                # Ordered by the group keys (one row per group: a total order), or LIMIT would pick
                # groups by the plan (seed 11 case 882: a BROADCAST hint changed which 100 it kept).
                order = " ORDER BY " + ", ".join(f"t.{k.name}" for k in keys) if keys else ""
                sql += f"{order} LIMIT 100"
            blocks.append((alias, sql))
            outputs += [(alias, nm) for nm in names]
        items = []
        if keys:
            items += [f"b1.{k.name} AS {self.out_name(k.name)}" for k in keys]
        items += [f"{a}.{nm} AS {nm}" for a, nm in outputs]
        if self.chance(0.1):
            a, nm = self.pick(outputs)
            # Any type: an output may be MIN of a string (case 9444 multiplied one by 2). A sum or
            # an average rounded first: the last bits of a double's follow the order of additions,
            # which the plan sets, and text is compared exactly (seed 14 case 437: ...711 / ...708).
            value = f"ROUND({a}.{nm}, 6)" if nm in summed else f"{a}.{nm}"
            items.append(f"CONCAT(CAST({value} AS STRING), '!') AS {self.out_name('x')}")
        if keys:
            join = "LEFT JOIN" if miss == "left" else self.pick(["JOIN", "INNER JOIN", ","], [6, 1, 2])
            parts = [f"({blocks[0][1]}) b1"]
            where = []
            for alias, sql in blocks[1:]:
                conds = [
                    f"{self.pick(['b1', 'b' + str(self.rng.randint(1, int(alias[1:]) - 1))])}.{k.name} = "
                    f"{alias}.{k.name}"
                    for k in keys
                ]
                if miss == "partial" and alias == blocks[-1][0]:
                    conds = conds[:-1] or [f"b1.{keys[0].name} <> {alias}.{keys[0].name}"]
                if join == ",":
                    parts.append(f", ({sql}) {alias}")
                    where += conds
                else:
                    parts.append(f" {join} ({sql}) {alias} ON {' AND '.join(conds)}")
            body = "".join(parts)
        else:
            sep = self.pick([", ", " CROSS JOIN ", " JOIN "])  # JOIN without ON: a cross join too
            body = sep.join(f"({sql}) {alias}" for alias, sql in blocks)
            where = []
        if self.chance(0.15):
            a, nm = self.pick(outputs)
            where.append(f"{a}.{nm} IS NOT NULL")
        sql = f"SELECT {', '.join(items)} FROM {body}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return sql

    def shape_scalar_siblings(self) -> str:
        table = self.pick(["fact", "fact2", "lines", "part_f"])
        rel = self.table(table, alias="t")
        buckets = [rename(self.range_filter(rel), "t", "") for _ in range(self.pick([2, 3, 4]))]
        common = rename(self.predicate(rel), "t", "") if self.chance(0.3) else None

        def sub(text: str, bucket: str) -> str:
            where = " AND ".join(p for p in (common, bucket) if p)
            return f"(SELECT {text} FROM {rel.source} WHERE {where})"

        measures = [c for c in rel.columns if c.type in NUMERIC]
        items = []
        for bucket in buckets:
            m1, m2 = self.pick(measures), self.pick(measures)
            threshold = self.rng.randint(0, 60)
            if self.chance(0.6):
                text = (
                    f"CASE WHEN {sub('COUNT(*)', bucket)} > {threshold} THEN {sub(f'AVG({m1.name})', bucket)} "
                    f"ELSE {sub(f'AVG({m2.name})', bucket)} END"
                )
            else:
                text = sub(
                    self.pick(
                        [
                            f"SUM({m1.name})",
                            f"MAX({m1.name})",
                            f"COUNT({m1.name})",
                            f"AVG({m1.name})",
                            f"COUNT(DISTINCT {m1.name})",
                        ]
                    ),
                    bucket,
                )
            items.append(f"{text} AS {self.out_name('bucket')}")
        outer = self.pick(["dim_g", "dim_p", "dim_k", "fact"])
        orel = self.table(outer, alias="r")
        if self.chance(0.25):  # in WHERE instead
            m = self.pick(measures)
            numeric = [c.name for c in orel.columns if c.type in NUMERIC]
            cond = f"r.{self.pick(numeric)} < {sub(f'MAX({m.name})', buckets[0])}"
            cond2 = f"r.{self.pick(numeric)} >= {sub(f'MIN({m.name})', buckets[1])}"
            return (
                f"SELECT r.{orel.columns[0].name} AS {self.out_name('r')} FROM {orel.source} r WHERE {cond} AND {cond2}"
            )
        where = f" WHERE {self.predicate(orel)}" if self.chance(0.7) else ""
        if self.chance(0.1):
            items.append(f"r.{orel.columns[0].name} AS {self.out_name('r')}")
        return f"SELECT {', '.join(items)} FROM {orel.source} r{where}"

    def shape_cte_twice(self) -> str:
        table = self.pick(["fact", "fact2", "lines", "orders", "part_f", "dim_k"])
        rel = self.table(table, alias="t")
        key = self.pick(rel.keys())
        if self.chance(0.5):
            m = self.pick([c for c in rel.columns if c.type in NUMERIC])
            body = (
                f"SELECT t.{key.name}, SUM(t.{m.name}) AS total, COUNT(*) AS n FROM {rel.source} t"
                + (f" WHERE {self.predicate(rel)}" if self.chance(0.5) else "")
                + f" GROUP BY t.{key.name}"
            )
            cols = [
                Col(key.name, key.type, key.domain, Counter({v: 1 for v in key.freq})),
                Col("total", m.type, None, Counter()),
                Col("n", "bigint", None, Counter()),
            ]
            hot = 0
        else:
            chosen = [c for c in rel.columns if c is key or self.chance(0.5)]
            body = f"SELECT {', '.join('t.' + c.name for c in chosen)} FROM {rel.source} t" + (
                f" WHERE {self.predicate(rel)}" if self.chance(0.6) else ""
            )
            cols = chosen
            hot = 1 if table in HOT_TABLES else 0
        a = Rel("a", "c", cols, len(self.data.rows[table]))
        b = Rel("b", "c", cols, len(self.data.rows[table]))
        rels = [a, b]
        if self.chance(0.4):
            rels.append(self.relation(self.pick(DIMENSIONS), derived=0.0))
        if self.chance(0.2):
            # read twice: once joined, once in a subquery
            sql, _ = self.select_block(
                "c a", [a], [f"a.{key.name} IN (SELECT b.{key.name} FROM c b WHERE {self.predicate(b)})"]
            )
        else:
            if hot and len(self.data.rows[table]) > 150 and key.domain in ("K", "S", "P"):
                raise Rejected("a hot CTE joined to itself on a hot key")
            from_sql, visible, where = self.join_block(rels, "chain")
            sql, _ = self.select_block(from_sql, visible, where)
        return f"WITH c AS ({body}) {sql}"

    def shape_union(self) -> str:
        n = self.pick([1, 2, 3])
        rels = (
            [self.relation(t) for t in self.choose_tables(n, "star")]
            if n > 1
            else [self.relation(self.pick(list(TABLES)))]
        )
        from_sql, visible, where = (
            self.join_block(rels, "star") if n > 1 else (f"{rels[0].source} AS {rels[0].alias}", rels, [])
        )
        first, outputs = self.select_block(from_sql, visible, where, mode=self.pick(["plain", "group"]))
        self._aliases = Counter()
        m = self.pick([1, 2])
        rels2 = (
            [self.relation(t) for t in self.choose_tables(m, "star")]
            if m > 1
            else [self.relation(self.pick(list(TABLES)))]
        )
        from2, visible2, where2 = (
            self.join_block(rels2, "star") if m > 1 else (f"{rels2[0].source} AS {rels2[0].alias}", rels2, [])
        )
        items = []
        for name, t in outputs:
            candidates = [(r, c) for r in visible2 for c in r.columns if c.type == t]
            if candidates and self.chance(0.9):
                r, c = self.pick(candidates)
                items.append(f"{r.ref(c.name)} AS {name}")
            else:
                items.append(f"CAST(NULL AS {t.upper()}) AS {name}")
        where2 = where2 + self.filters(visible2, self.pick([0, 1, 2]))
        second = f"SELECT {', '.join(items)} FROM {from2}" + (" WHERE " + " AND ".join(where2) if where2 else "")
        if " ORDER BY " in first or " LIMIT " in first:
            first = f"SELECT * FROM ({first}) u1"
        if self.chance(0.4):
            names = [n for n, _ in outputs]
            key = names[0]
            return (
                f"SELECT u.{key} AS {key}, COUNT(*) AS {self.out_name('n')} FROM ({first} UNION ALL {second}) u "
                f"GROUP BY u.{key}"
            )
        return f"{first} UNION ALL {second}"

    def shape_pruning(self) -> str:
        variant = self.pick(["partitioned", "aggregated", "sorted", "left", "semi"], [3, 3, 2, 1, 1])
        small_table = self.pick(["dim_p", "dim_d"]) if variant != "sorted" else self.pick(["dim_k", "dim_s", "dim_d"])
        small = self.table(small_table, alias="d")
        if variant == "sorted":
            big_table = self.pick(["fact", "fact2", "orders"])
            big = self.table(big_table, alias="b")
            pairs = self.edges_between(big, small)
            if not pairs:
                raise Rejected("no key")
            bcol, scol = self.pick(pairs)
            big_sql = big.source
        elif variant == "aggregated":
            base = self.pick(["part_f", "fact", "lines"])
            t = self.table(base, alias="i")
            pairs = self.edges_between(t, small)
            if not pairs:
                raise Rejected("no key")
            bcol, scol = self.pick(pairs)
            other = self.pick([c for c in t.keys() if c.name != bcol.name] or [bcol])
            m = self.pick([c for c in t.columns if c.type in NUMERIC])
            groups = [bcol.name] + ([other.name] if other.name != bcol.name and self.chance(0.5) else [])
            big_sql = (
                f"(SELECT {', '.join('i.' + g for g in groups)}, SUM(i.{m.name}) AS total FROM {t.source} i"
                + (f" WHERE {self.predicate(t)}" if self.chance(0.3) else "")
                + f" GROUP BY {', '.join('i.' + g for g in groups)})"
            )
            big = Rel(
                "b",
                big_sql,
                [Col(g, t.col(g).type, t.col(g).domain, Counter({v: 1 for v in t.col(g).freq})) for g in groups]
                + [Col("total", m.type, None, Counter())],
                60,
            )
        else:
            big = self.table("part_f", alias="b")
            pairs = [(x, y) for x, y in self.edges_between(big, small) if x.name == "p"] or self.edges_between(
                big, small
            )
            bcol, scol = self.pick(pairs)
            big_sql = big.source
        dfilters = self.filters([small], self.pick([0, 1, 2], [0.5, 2, 2]))
        if variant == "left":
            from_sql = f"{small.source} d LEFT JOIN {big_sql} b ON b.{bcol.name} = d.{scol.name}"
            if self.chance(0.3):
                from_sql += f" AND {self.predicate(small)}"
        elif variant == "semi":
            from_sql = f"{big_sql} b LEFT SEMI JOIN {small.source} d ON b.{bcol.name} = d.{scol.name}"
            if dfilters:
                from_sql += " AND " + " AND ".join(dfilters)
                dfilters = []
        else:
            first, second = (
                (f"{big_sql} b", f"{small.source} d") if self.chance(0.6) else (f"{small.source} d", f"{big_sql} b")
            )
            from_sql = f"{first} JOIN {second} ON b.{bcol.name} = d.{scol.name}"
        rels = [big] + ([small] if variant != "semi" else [])
        if self.chance(0.3):
            dim = self.table(self.pick(["dim_g", "dim_k", "dim_s"]))
            pairs = [(r, x, y) for r in rels for x, y in self.edges_between(r, dim)]
            if pairs:
                r, x, y = self.pick(pairs)
                from_sql += f" JOIN {dim.source} {dim.alias} ON {r.ref(x.name)} = {dim.ref(y.name)}"
                rels.append(dim)
        sql, _ = self.select_block(from_sql, rels, dfilters, mode=self.pick(["plain", "group"]))
        return sql

    def shape_skew(self) -> str:
        hot = self.pick(["fact", "fact2", "part_f"])
        big = self.table(hot)
        key = {"fact": "k", "fact2": self.pick(["k", "s"]), "part_f": "p"}[hot]
        col = big.col(key)
        others = [
            t
            for t in list(DIMENSIONS) + ["orders", "fact", "fact2"]
            if any(c.domain == col.domain for c in TABLES[t]) and t != hot
        ]
        other = self.table(self.pick(others))
        ocol = next(c for c in other.columns if c.domain == col.domain)
        rels = [big, other]
        join = self.pick(["JOIN", "LEFT JOIN", "RIGHT JOIN", "INNER JOIN"], [5, 3, 0.6, 1])
        # A LEFT join is split only with the skewed side preserved; mostly written that way.
        first, second = (big, other) if self.chance(0.75 if join == "LEFT JOIN" else 0.5) else (other, big)
        from_sql = (
            f"{first.source} {first.alias} {join} {second.source} {second.alias} "
            f"ON {big.ref(key)} = {other.ref(ocol.name)}"
        )
        if self.chance(0.2):
            from_sql += f" AND {self.predicate(other)}"
        if self.chance(0.35):
            third = self.table(self.pick(DIMENSIONS))
            pairs = [(r, x, y) for r in rels for x, y in self.edges_between(r, third)]
            if pairs:
                r, x, y = self.pick(pairs)
                kind = self.pick(["JOIN", "LEFT JOIN"])
                from_sql += f" {kind} {third.source} {third.alias} ON {r.ref(x.name)} = {third.ref(y.name)}"
                rels.append(third)
        sql, _ = self.select_block(
            from_sql, rels, [], mode=self.pick(["plain", "group", "window"]), filters=(6, 3, 1, 0)
        )
        return sql

    def shape_nondeterministic(self) -> str:
        variant = self.pick(["derived", "cte", "where", "small_side"])
        if variant == "small_side":
            # A sampled small side of a join to the partitioned table: partition pruning must not
            # fetch its keys in a query of their own (another draw than the join's). By rows, a
            # sample is a LIMIT: on a cluster, which rows pass its cut changes from run to run.
            if self.chance(0.3):
                small = f"fuzz.dim_p TABLESAMPLE ({self.rng.randint(1, 20)} ROWS)"
            else:
                small = f"(SELECT p, region FROM fuzz.dim_p WHERE rand() < {self.rng.randint(1, 9) / 10})"
            return (
                f"SELECT f.p AS p, SUM(f.v) AS total FROM fuzz.part_f f JOIN {small} d ON f.p = d.p "
                "WHERE d.region IS NOT NULL GROUP BY f.p"
            )
        if variant == "derived":
            return (
                "SELECT d.name AS name, SUM(f.v) AS total FROM (SELECT k, v FROM fuzz.fact WHERE rand() < 0.5) f "
                "JOIN fuzz.dim_k d ON f.k = d.k GROUP BY d.name"
            )
        if variant == "cte":
            return (
                "WITH r AS (SELECT f.k, f.v * rand() AS v FROM fuzz.fact f) SELECT r1.k AS k, r1.v AS v FROM r r1 "
                "JOIN (SELECT k, AVG(v) AS a FROM r GROUP BY k) s ON s.k = r1.k WHERE r1.v > s.a"
            )
        return (
            "SELECT f.k AS k, d.name AS name FROM fuzz.fact f JOIN fuzz.dim_k d ON f.k = d.k "
            f"WHERE rand() < {self.rng.randint(1, 9) / 10}"
        )


def without_output_aliases(sql: str, rng: random.Random) -> str | None:
    """The query with some of its output expressions' aliases dropped: Spark then names those
    columns after the expressions' text (`count(1)`), a name a rewrite keeps only by giving it
    as an alias (prepare_query's `spark_output_names`). An alias the query refers to (ORDER BY)
    stays; plain columns keep theirs (their name is the column's). None: nothing dropped.

    >>> without_output_aliases("SELECT COUNT(*) AS n, f.k AS k FROM fuzz.fact AS f GROUP BY f.k", random.Random(1))
    'SELECT COUNT(*), f.k AS k FROM fuzz.fact AS f GROUP BY f.k'
    """
    tree = sqlglot.parse_one(sql, read="spark")
    select = tree
    while isinstance(select, (exp.SetOperation, exp.Subquery)):
        select = select.this if isinstance(select, exp.Subquery) else select.left
    if not isinstance(select, exp.Select):
        return None
    uses = Counter(identifier.name.lower() for identifier in tree.find_all(exp.Identifier))
    dropped = False
    for projection in list(select.expressions):
        if not isinstance(projection, exp.Alias) or isinstance(projection.this, exp.Column):
            continue
        if uses[projection.alias.lower()] == 1 and rng.random() < 0.7:
            projection.replace(projection.this.copy())
            dropped = True
    return tree.sql("spark") if dropped else None


def rename(text: str, old: str, new: str) -> str:
    """`old.` column qualifiers in a generated predicate replaced by `new.` (or dropped)."""
    return re.sub(rf"\b{old}\.", f"{new}." if new else "", text)


def step_edges(step: Step, placed: list[Rel], edges) -> list[tuple[Rel, Rel, Col, Col]]:
    """The edges (relation a, relation b, col a, col b) between a step's relation and those placed."""
    out = []
    for a, b, x, y in edges:
        if (a is step.rel and b in placed) or (b is step.rel and a in placed):
            out.append((a, b, x, y))
    return out
