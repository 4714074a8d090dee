"""The corpus fuzzer's pure parts (fuzz/corpus.py): the total order it gives a query with a
LIMIT, and the statistics it distorts (values from the data only, counts that stay counts)."""

import os
import random
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from fuzz.corpus import CorpusData, distort, total_order  # noqa: E402


def _gathered() -> dict:
    def estimate(value, precision="exact"):
        return {"value": value, "precision": precision}

    return {
        "db.fact": {
            "row_count": estimate(1000),
            "size_bytes": estimate(20_000),
            "columns": {
                "k": {
                    "ndv": estimate(50, "estimated"),
                    "null_count": estimate(10),
                    "min": 1,
                    "max": 50,
                    "heavy_hitters": [[7, 300], [3, 40]],
                    "histogram": [1, 10, 20, 50],
                },
                "note": {"ndv": estimate(900, "estimated"), "null_count": estimate(0), "min": "a", "max": "z"},
            },
        },
        "db.dim": {
            "row_count": estimate(50),
            "size_bytes": estimate(900),
            "columns": {"k": {"ndv": estimate(50, "estimated"), "null_count": estimate(0), "min": 1, "max": 50}},
        },
    }


def test_a_limit_gets_every_output_position_after_its_order():
    assert total_order("SELECT a, b FROM t ORDER BY b DESC LIMIT 5", 2) == (
        "SELECT a, b FROM t ORDER BY b DESC, 1, 2 LIMIT 5"
    )
    assert total_order("SELECT a, b FROM t LIMIT 5", 2) == "SELECT a, b FROM t ORDER BY 1, 2 LIMIT 5"
    union = total_order("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a LIMIT 3", 1)
    assert union.endswith("ORDER BY a, 1 LIMIT 3")


def test_a_query_without_limit_is_left_as_written():
    sql = "SELECT a FROM t ORDER BY a"
    assert total_order(sql, 1) == sql
    sub = "SELECT * FROM (SELECT a FROM t ORDER BY a LIMIT 3) AS s"
    assert total_order(sub, 1) == sub  # only the outermost level's LIMIT decides which rows come out


def test_distorted_statistics_keep_the_datas_values_and_sane_counts():
    gathered = _gathered()
    keys = {"db.fact": {"k"}, "db.dim": {"k"}}
    qualities = set()
    for seed in range(300):
        stats = distort(random.Random(seed), gathered, keys)
        for name, entry in stats.items():
            rows = entry["row_count"]["value"]
            assert rows >= 0
            for column, col in entry["columns"].items():
                assert 0 <= col["ndv"]["value"] <= max(rows, 1)
                hitters = col.get("heavy_hitters") or []
                # values come from the data only (never NULL, never made up); counts stay within the rows
                assert [v for v, _ in hitters] == [
                    v for v, _ in gathered[name]["columns"][column].get("heavy_hitters", [])
                ]
                assert all(0 <= c <= max(rows, 1) * 1.0001 for _, c in hitters)
        if stats == gathered:
            qualities.add("true")
        elif len(stats) < len(gathered):
            qualities.add("table missing")
        inflated = (stats.get("db.fact") or {}).get("columns", {}).get("k", {}).get("heavy_hitters")
        if inflated and inflated[0][1] >= 0.3 * stats["db.fact"]["row_count"]["value"] > 0:
            qualities.add("skew")
    assert qualities == {"true", "table missing", "skew"}
    assert gathered == _gathered()  # the gathered statistics are not modified


def test_values_are_the_heavy_hitters_else_min_and_max():
    data = CorpusData("db", {"fact": {"k": "int", "note": "string"}}, {"fact": {"k"}}, _gathered())
    assert data.values("fact", "k") == [7, 3]
    assert data.values("fact", "note") == ["a", "z"]
    assert [c.name for c in data.tables["fact"] if c.domain] == ["k"]
    assert data.skew_pool == ("fact",)
