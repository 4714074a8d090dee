"""A differential fuzzer for dbt-hiveopt's optimizer.

The promise under test: statistics and config steer the optimizer's decisions only, never the
results. For random queries over a fixed set of small tables (`tables`), random statistics and
config (`inputs`), the original SQL and the optimized SQL run on a real local Spark must return
the same multiset of rows with the same column names in the same order, and the optimized SQL
must never fail where the original ran (`runner`).

    .venv/bin/python -m fuzz --queries 2000 --seed 1 [--out findings/]

Modules: `tables` (the data and its schema), `queries` (the query generator), `inputs`
(statistics and config), `compare` (result comparison), `minimize` (shrinking a failing case),
`runner` (one case, the counts, the summary), `session` (the local SparkSession of the CLI),
`corpus` (the same comparison for TPC-DS's and TPC-H's queries under gathered and distorted
statistics: `python -m fuzz.corpus --suite tpcds`).

The optimizer is imported from this work tree (`dbt/adapters/hiveopt` next to this package)
when nothing imported it before: the virtualenv holds an installed copy that may lag behind the
sources being edited. `optimizer_origin()` says which copy a run tests.
"""

from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _prefer_work_tree() -> None:
    """Put this work tree's `dbt/adapters` first on the `dbt.adapters` namespace path, unless
    `dbt.adapters.hiveopt` is imported already (then that copy is what the process runs)."""
    if "dbt.adapters.hiveopt" in sys.modules:
        return
    try:
        import dbt.adapters
    except ImportError:
        return
    local = os.path.join(REPO, "dbt", "adapters")
    if not os.path.isdir(os.path.join(local, "hiveopt")):
        return
    paths = [p for p in dbt.adapters.__path__ if os.path.abspath(p) != local]
    dbt.adapters.__path__[:] = [local, *paths]


def optimizer_origin() -> str:
    """The folder the optimizer package is imported from."""
    import dbt.adapters.hiveopt.optimizer as optimizer

    return os.path.dirname(os.path.abspath(optimizer.__file__))


_prefer_work_tree()
