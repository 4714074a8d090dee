"""The enumerator: DPccp visits exactly the csg-cmp pairs, finds the optimum that brute force
over all trees finds, goes greedy past its bound, and joins disconnected components last."""

import random

import pytest

from dbt.adapters.hiveopt.optimizer.enumerate_joins import Plan, best_plan, csg_cmp_pairs


def connected(mask, adj):
    start = mask & -mask
    component, frontier = start, start
    while frontier:
        nxt = 0
        for i in range(len(adj)):
            if frontier >> i & 1:
                nxt |= adj[i]
        frontier = nxt & mask & ~component
        component |= frontier
    return component == mask


def random_graph(rng, n, extra):
    adj = [0] * n
    for i in range(1, n):
        j = rng.randrange(i)
        adj[i] |= 1 << j
        adj[j] |= 1 << i
    for _ in range(extra):
        i, j = rng.sample(range(n), 2)
        adj[i] |= 1 << j
        adj[j] |= 1 << i
    return adj


@pytest.mark.parametrize("seed", range(20))
def test_dpccp_enumerates_every_csg_cmp_pair_once(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    adj = random_graph(rng, n, rng.randint(0, 4))
    pairs = csg_cmp_pairs(n, adj)
    expected = set()
    for s1 in range(1, 1 << n):
        for s2 in range(1, 1 << n):
            if s1 & s2 or not connected(s1, adj) or not connected(s2, adj):
                continue
            neighbours = 0
            for i in range(n):
                if s1 >> i & 1:
                    neighbours |= adj[i]
            if neighbours & s2 and (s1 & -s1) < (s2 & -s2):
                expected.add((s1, s2))
    found = {(a, b) if (a & -a) < (b & -b) else (b, a) for a, b in pairs}
    assert found == expected and len(pairs) == len(found)


def _planner(rows, adj, selectivity):
    def leaf(i):
        return Plan(1 << i, rows=rows[i], cost=0.0)

    def join(left, right):
        out = left.rows * right.rows
        for i in range(len(rows)):
            for j in range(len(rows)):
                if left.relations >> i & 1 and right.relations >> j & 1 and adj[i] >> j & 1:
                    out *= selectivity[min(i, j)][max(i, j)]
        return Plan(left.relations | right.relations, left, right, rows=out, cost=left.cost + right.cost + out)

    return leaf, join


def _all_trees(relations, adj, leaf, join):
    """Every tree without cross products (brute force), for small n."""
    members = [i for i in range(len(adj)) if relations >> i & 1]
    if len(members) == 1:
        yield leaf(members[0])
        return
    sub = (relations - 1) & relations
    while sub:
        other = relations & ~sub
        if connected(sub, adj) and connected(other, adj):
            for left in _all_trees(sub, adj, leaf, join):
                for right in _all_trees(other, adj, leaf, join):
                    yield join(left, right)
        sub = (sub - 1) & relations


@pytest.mark.parametrize("seed", range(10))
def test_dp_finds_the_brute_force_optimum(seed):
    rng = random.Random(100 + seed)
    n = rng.randint(3, 5)
    adj = random_graph(rng, n, rng.randint(0, 2))
    rows = [10 ** rng.randint(1, 6) for _ in range(n)]
    selectivity = [[1 / 10 ** rng.randint(0, 5) for _ in range(n)] for _ in range(n)]
    leaf, join = _planner(rows, adj, selectivity)
    plan, method = best_plan(n, adj, leaf, join)
    optimum = min(t.cost for t in _all_trees((1 << n) - 1, adj, leaf, join))
    assert method == "dpccp" and plan.cost == pytest.approx(optimum)


def test_greedy_beyond_the_bound_and_cross_products_last():
    n = 20
    chain = [(1 << (i - 1) if i else 0) | (1 << (i + 1) if i < n - 1 else 0) for i in range(n)]
    leaf, join = _planner([10] * n, chain, [[0.1] * n for _ in range(n)])
    plan, method = best_plan(n, chain, leaf, join)
    assert method == "greedy" and plan.relations == (1 << n) - 1
    # two components: {0, 1} and {2}; the cross product joins the components at the top
    adj = [0b010, 0b001, 0]
    leaf, join = _planner([100, 100, 5], adj, [[0.01] * 3 for _ in range(3)])
    plan, method = best_plan(3, adj, leaf, join)
    assert method.endswith("cross products")
    assert {plan.left.relations, plan.right.relations} == {0b011, 0b100}
