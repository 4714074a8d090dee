"""Races between dbt's threads and the threads the adapter runs beside the builds, found by a
review of the shared state on 2026-12-03. Those the code before could be driven through (the
second save, the stored table, the torn record, the one bad record) were shown failing before
their fix; the first pass's `finished` and the single end are new seams.

The threads beside the builds (`HiveoptAdapter._start_thread`): one thread per slot at a time,
and the one in the slot is the one the end of the invocation joins. Two builds that end together
both ask for a save: a second thread must not start while the first one, in the slot, has not
yet started (a thread not yet started is not alive). Two saves did start so, and the end of the
invocation joined only the second: the first one wrote after dbt had closed the invocation (its
warning came after dbt's last line, in a test run on 2026-12-03)."""

import os
import threading

from dbt.adapters.hiveopt.impl import HiveoptAdapter


class _Slots:
    """What _start_thread needs of the adapter: its lock and the slot attribute."""

    def __init__(self):
        self._hiveopt_lock = threading.Lock()
        self._saver = None


def _race(slots: _Slots, callers: int) -> int:
    """`callers` threads ask for the same slot at once; returns how many works ran."""
    started, release = [], threading.Event()
    barrier = threading.Barrier(callers)

    def work():
        started.append(threading.current_thread())
        release.wait(5)

    def ask():
        barrier.wait()
        HiveoptAdapter._start_thread(slots, "hiveopt-save", work, slot="_saver")

    askers = [threading.Thread(target=ask) for _ in range(callers)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    in_slot = slots._saver
    release.set()
    in_slot.join(5)
    for thread in started:
        thread.join(5)
    assert in_slot in started  # the slot holds the thread that ran: the one the end joins
    return len(started)


def test_builds_ending_together_start_one_save():
    runs = [_race(_Slots(), callers=4) for _ in range(300)]
    assert max(runs) == 1, f"more than one thread ran for one slot in {sum(r > 1 for r in runs)} of 300 races"


def test_a_slot_takes_a_new_thread_once_the_last_has_ended():
    slots = _Slots()
    assert _race(slots, callers=1) == 1
    assert _race(slots, callers=1) == 1  # the first one ended: the next save starts


def test_the_first_pass_thread_calls_finished_when_its_connection_does_not_open():
    """`stats.first_pass: behind`: the pass's thread opens a connection of its own; when that
    fails, the pass never runs, and the models must not wait for it (InputGatherer's `finished`)."""
    from contextlib import contextmanager

    class Adapter(_Slots):
        _first_passer = None

        @contextmanager
        def connection_named(self, name):
            raise RuntimeError("no connection")
            yield

    adapter, calls = Adapter(), []
    adapter._on_own_connection = lambda work, failed, name: HiveoptAdapter._on_own_connection(
        adapter, work, failed, name
    )
    adapter._start_thread = lambda *a, **k: HiveoptAdapter._start_thread(adapter, *a, **k)
    HiveoptAdapter._start_first_pass(adapter, lambda: calls.append("work"), lambda: calls.append("not run"))
    adapter._first_passer.join(5)
    assert calls == ["not run"]


def test_cleanup_does_the_invocations_end_once():
    """dbt-core 1.11 calls cleanup_connections at the end of its task, again in its adapter
    management, and once more when the next invocation in the process resets the adapters: the
    closing line, the joins and the last save happen on the first call; every call closes dbt's
    connections."""
    from unittest import mock

    from dbt.adapters.spark.impl import SparkAdapter

    adapter = HiveoptAdapter.__new__(HiveoptAdapter)  # no connections, no config: the method alone
    adapter._hiveopt_lock, adapter._cleaned = threading.Lock(), False
    adapter._close_invocation = mock.Mock()
    with mock.patch.object(SparkAdapter, "cleanup_connections") as closes:
        for _ in range(3):
            adapter.cleanup_connections()
    assert adapter._close_invocation.call_count == 1 and closes.call_count == 3
    adapter._cleaned, adapter._close_invocation = False, mock.Mock(side_effect=OSError("disk full"))
    with (
        mock.patch.object(SparkAdapter, "cleanup_connections") as closes,
        mock.patch("dbt.adapters.hiveopt.impl.logger") as logger,
    ):
        adapter.cleanup_connections()  # hiveopt's end failed: dbt's connections still close, no raise
    assert closes.call_count == 1
    (warning,) = [call.args[0] for call in logger.warning.call_args_list]
    assert "the invocation's end not recorded (OSError: disk full)" in warning


def test_a_table_being_parsed_from_the_store_is_not_never_gathered_to_another_thread():
    """The store's rows of a table are parsed on first use (`StatisticsStore._stored`). They were
    taken out before the parse: a second thread asking meanwhile found neither them nor the
    parsed statistics, and was told "never gathered" (a view model then had no statistics, or
    a first pass behind the builds took a table that had them)."""
    import json
    import time

    from dbt.adapters.hiveopt.optimizer.statistics import Estimate, TableStats
    from dbt.adapters.hiveopt.statistics_service import StatisticsService

    service = StatisticsService(lambda sql: [])
    service._store_loaded = True
    payload = json.dumps(TableStats(row_count=Estimate.exact(10)).to_dict())
    service._unparsed = {"a.t": [("2026-12-01", "fp", payload)]}
    parse, parsing = service._newest_valid, threading.Event()

    def slow_parse(name, versions):  # a parse that takes a while (a big payload, a busy GIL)
        parsing.set()
        time.sleep(0.2)
        return parse(name, versions)

    service._newest_valid = slow_parse
    first = []
    parser = threading.Thread(target=lambda: first.append(service._stored("a.t")))
    parser.start()
    assert parsing.wait(5)
    meanwhile = service._stored("a.t")  # another model's thread, while the first one parses
    parser.join(5)
    assert first[0] is not None and meanwhile is not None
    assert meanwhile.row_count.value == 10 and "a.t" not in service._unparsed  # parsed, not kept twice


def test_a_record_read_while_another_thread_rewrites_it_is_whole(tmp_path):
    """The build records (`target/hiveopt/<model>.json`) are read without a lock (the actual-rows
    thread, a build reading its feedback) while other threads rewrite them: each write replaces
    the file whole, so a reader never sees half a record."""
    import json

    from dbt.adapters.hiveopt.report import Report

    report = Report(str(tmp_path))
    report.write("m", "select 1", {"join_trees": {"x": ["y" * 80] * 300}, "feedback": {}})  # 25 KB, as a real one
    stop, torn, reads = threading.Event(), [], []

    def rewrite():
        n = 0
        while not stop.is_set():
            n += 1
            report.update("m", {"feedback": {"seconds": n}})

    def read():
        while not stop.is_set():
            try:
                reads.append(report.read("m")["feedback"])
            except json.JSONDecodeError as error:
                torn.append(error)

    threads = [threading.Thread(target=rewrite), threading.Thread(target=read)]
    for thread in threads:
        thread.start()
    threading.Event().wait(0.5)
    stop.set()
    for thread in threads:
        thread.join(5)
    assert reads and not torn, f"{len(torn)} torn reads of {len(torn) + len(reads)}"
    assert sorted(os.listdir(tmp_path)) == ["m.json", "m.sql"]  # no part file left


def test_one_record_that_cannot_be_read_leaves_the_others_measured(tmp_path, monkeypatch):
    """The actual rows of the builds run since the last read go into their records one by one:
    one record's trouble (here a file that does not parse) is said in that record, and the
    others are still read (one error ended the whole read, and its builds' records kept "to be
    read at the end of the dbt invocation" for good)."""
    from dbt.adapters.hiveopt import build_records
    from dbt.adapters.hiveopt.actual_rows import SparkPlan
    from dbt.adapters.hiveopt.report import Report

    report = Report(str(tmp_path))
    tree = {"kind": "scan", "alias": "f", "relation": "db.f", "rows": 10}
    for label in ("a", "b"):
        report.write(label, "select 1", {"join_trees": {"chosen": {"root": tree}}, "actual_rows": "to be read"})
    (tmp_path / "a.json").write_text("{ half a record")
    plan = SparkPlan(nodes={1: ("Scan parquet spark_catalog.db.f", 12)})
    monkeypatch.setattr(build_records, "_session", lambda: None)
    monkeypatch.setattr(build_records, "latest_execution_id", lambda spark: 5)
    monkeypatch.setattr(build_records, "read_plans", lambda spark, wanted, window: {d: plan for d in wanted})
    records = build_records.BuildRecords(report, None, None, session=True, method="session")
    records._unread = [("tag a", "a", 1), ("tag b", "b", 1)]
    records.read_actual_rows()
    assert report.read("b")["actual_rows"] == "measured by Spark"
    assert report.read("b")["join_trees"]["chosen"]["root"]["actual_rows"] == 12
