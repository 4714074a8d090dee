"""The report's pages are written again only when what they show changes: build after build the same
SQL and decisions give the same page, and rewriting it was file system work on dbt's wall time at
the end of every invocation."""

import json
import os
import time

from dbt.adapters.hiveopt.html_report import write_index


def _record(reason: str) -> dict:
    return {
        "invocation_id": "i1",
        "model": "m",
        "materialization": "table",
        "original_sql": "SELECT a.k FROM db.a AS a JOIN db.b AS b ON a.k = b.k",
        "optimized_sql": "SELECT /*+ BROADCAST(b) */ a.k FROM db.a AS a JOIN db.b AS b ON a.k = b.k",
        "changed": True,
        "fired_rules": ["select_join_algorithms"],
        "optimizer_ms": 12.5,
        "rules": [
            {"rule": "select_join_algorithms", "elapsed_ms": 3.1, "decisions": [{"fired": True, "reason": reason}]}
        ],
    }


def _write(folder, record) -> None:
    with open(os.path.join(folder, "m.json"), "w") as handle:
        json.dump(record, handle)
    assert write_index(str(folder), "i1") == os.path.join(folder, "index.html")


def test_a_page_that_would_not_change_is_not_written_again(tmp_path):
    page = tmp_path / "m.html"
    _write(tmp_path, _record("broadcast b: 1 KB"))
    first = page.stat().st_mtime_ns
    assert "broadcast b: 1 KB" in page.read_text() and "BROADCAST(b)" in page.read_text()
    time.sleep(0.05)
    # The next build: other timings, the same SQL and decisions.
    again = _record("broadcast b: 1 KB")
    again["optimizer_ms"], again["rules"][0]["elapsed_ms"] = 30.0, 9.9
    _write(tmp_path, again)
    assert page.stat().st_mtime_ns == first
    assert "30.0" in (tmp_path / "index.html").read_text()  # the index shows this build's figures
    # Another decision: the page says so.
    _write(tmp_path, _record("broadcast b: 2 KB"))
    assert page.stat().st_mtime_ns != first and "broadcast b: 2 KB" in page.read_text()
