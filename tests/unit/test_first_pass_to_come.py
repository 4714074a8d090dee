"""Whether the invocation's first statistics pass is still to come (InputGatherer.first_pass_to_come):
a save behind the build waits for it rather than take the cores from it."""

import threading

from dbt.adapters.hiveopt.model_inputs import InputGatherer


def _table_model(name, code):
    """A table model of the graph over source s.orders."""
    return {
        "resource_type": "model",
        "schema": "a",
        "name": name,
        "config": {"materialized": "table"},
        "raw_code": code,
        "depends_on": {"nodes": ["source.p.s.orders"]},
    }


GRAPH = {
    "sources": {"source.p.s.orders": {"resource_type": "source", "schema": "s", "identifier": "orders"}},
    "nodes": {
        "model.p.mart": _table_model(
            "mart", "select * from {{ source('s', 'orders') }} o join {{ source('s', 'orders') }} p on o.k = p.k"
        ),
        "model.p.flat": _table_model("flat", "select k from {{ source('s', 'orders') }}"),
    },
}


class PassThatWaits:
    """A statistics service whose batched pass runs until `release` is set."""

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()
        self.project_words, self.seed_files, self.project_keys_from = {}, {}, None

    def gather_many(self, names):
        self.started.set()
        self.release.wait(10)
        return {}, 0.0


def test_to_come_until_the_pass_has_run():
    service = PassThatWaits()
    inputs = InputGatherer(service)
    assert inputs.first_pass_to_come() is None  # no model has reached the adapter yet
    inputs.read_project(GRAPH, ["model.p.mart"])
    assert inputs.first_pass_to_come() is True
    running = threading.Thread(target=inputs._first_pass, args=({},))
    running.start()
    assert service.started.wait(10)
    assert inputs.first_pass_to_come() is True  # running
    service.release.set()
    running.join(10)
    assert inputs.first_pass_to_come() is False


def test_none_to_come_where_no_selected_model_may_use_statistics():
    inputs = InputGatherer(PassThatWaits())
    inputs.read_project(GRAPH, ["model.p.flat"])
    assert inputs.first_pass_to_come() is False


class PassThatGathers(PassThatWaits):
    def gather_many(self, names):
        super().gather_many(names)
        return {"s.orders": object()}, 0.2


def test_a_model_that_waited_for_the_pass_says_how_long():
    """The models that wait while another model's thread runs the first pass start their builds
    that much later: their records say so (and `hiveopt summary` does not count the wait as
    hiveopt's own time); the model that ran it records the pass."""
    from dbt.adapters.hiveopt.model_inputs import FIRST_PASS, FIRST_PASS_WAIT

    service = PassThatGathers()
    inputs = InputGatherer(service)
    inputs.read_project(GRAPH, ["model.p.mart"])
    ran, waited = {}, {}
    first = threading.Thread(target=inputs._first_pass, args=(ran,))
    first.start()
    assert service.started.wait(10)
    second = threading.Thread(target=inputs._first_pass, args=(waited,))
    second.start()
    second.join(0.3)  # blocked behind the pass
    service.release.set()
    first.join(10)
    second.join(10)
    assert ran[FIRST_PASS]["tables"] == ["s.orders"] and FIRST_PASS_WAIT not in ran
    assert FIRST_PASS not in waited
    assert waited[FIRST_PASS_WAIT]["tables"] == ["s.orders"]
    assert waited[FIRST_PASS_WAIT]["waited_seconds"] >= 0.25
    later = {}
    inputs._first_pass(later)  # a model after the pass: no wait to speak of
    assert later == {}


def test_what_the_run_has_described_is_answered_while_a_pass_holds_the_table():
    """A pass over a table holds its lock for seconds; a model that only wants the table's
    columns, described already in this run, does not wait behind it (it waits, if at all, for
    the first pass itself, where its record can say so)."""
    from dbt.adapters.hiveopt.statistics_service import StatisticsService
    from dbt.adapters.hiveopt.table_info import TableInfo

    def no_statements(sql):
        raise AssertionError(f"no statement expected: {sql}")

    service = StatisticsService(no_statements)
    info = TableInfo("s.orders", {"k": "int"}, "EXTERNAL", created="t0", size_bytes=10)
    service._infos["s.orders"] = info
    passing, done = threading.Event(), threading.Event()

    def pass_over_orders():
        with service._table_lock("s.orders"):
            passing.set()
            done.wait(10)

    holder = threading.Thread(target=pass_over_orders)
    holder.start()
    try:
        assert passing.wait(10)
        answered = []
        reader = threading.Thread(target=lambda: answered.append(service.describe("S.Orders")))
        reader.start()
        reader.join(2)
        assert answered == [info]
    finally:
        done.set()
        holder.join(10)


class NeverGathered(PassThatGathers):
    def current(self, name):
        return None, "never gathered"


def test_a_pass_behind_the_builds_keeps_every_model_from_waiting():
    """`stats.first_pass: behind`: the first model that needs statistics starts the pass on a
    thread of its own and goes on; while it runs, models read its tables without statistics
    (without waiting on the table's lock, which the pass holds) and their records say why; once it
    has run, the pass's seconds are there for the starting model's record, and nothing is to come."""
    from dbt.adapters.hiveopt.model_inputs import BEHIND_STATE, FIRST_PASS, FIRST_PASS_BEHIND, _Wanted

    service = NeverGathered()
    threads = []

    def run_behind(work, finished):
        threads.append(threading.Thread(target=work))
        threads[-1].start()

    inputs = InputGatherer(service, run_behind=run_behind)
    inputs.read_project(GRAPH, ["model.p.mart"])
    started = {}
    inputs._first_pass_behind(started, "mart")  # returns while the pass runs
    assert service.started.wait(10) and not service.release.is_set()
    entry = started[FIRST_PASS_BEHIND]
    assert entry["tables"] == ["s.orders"] and entry["behind"] and FIRST_PASS not in started
    assert inputs.first_pass_to_come() is True
    meanwhile = {}
    inputs._first_pass_behind(meanwhile, "other")  # a second model: nothing more started
    assert meanwhile == {} and len(threads) == 1
    assert inputs._table("S.Orders", _Wanted(set(), set()), (True, ""), meanwhile) is None
    assert meanwhile["S.Orders"]["state"] == BEHIND_STATE
    service.release.set()
    threads[0].join(10)
    assert inputs.first_pass_to_come() is False and not inputs._gathered_behind("s.orders")
    label, done = inputs.behind_done
    assert label == "mart" and done["seconds"] == 0.2 and done["tables"] == ["s.orders"]


def test_a_pass_behind_that_cannot_start_leaves_the_models_to_gather():
    """A pass that cannot be started (no thread, no connection) is no pass: models gather the
    tables they read themselves, as without the setting."""
    from dbt.adapters.hiveopt.model_inputs import FIRST_PASS_BEHIND

    def cannot_start(work, finished):
        raise RuntimeError("no connection")

    inputs = InputGatherer(NeverGathered(), run_behind=cannot_start)
    inputs.read_project(GRAPH, ["model.p.mart"])
    started = {}
    inputs._first_pass_behind(started, "mart")
    assert inputs.first_pass_to_come() is False and not inputs._gathered_behind("s.orders")
    assert FIRST_PASS_BEHIND not in started and inputs.behind_done is None


def test_a_pass_behind_whose_thread_gets_no_connection_keeps_no_model_waiting():
    """The thread started, but its connection did not open, so the pass never ran: the adapter
    calls `finished` (HiveoptAdapter._start_first_pass), and the models then read the tables as
    without the setting instead of waiting for a pass that will not come."""
    service = NeverGathered()
    threads = []

    def no_connection(work, finished):
        threads.append(threading.Thread(target=finished))  # what the adapter's thread does then
        threads[-1].start()

    inputs = InputGatherer(service, run_behind=no_connection)
    inputs.read_project(GRAPH, ["model.p.mart"])
    inputs._first_pass_behind({}, "mart")
    threads[0].join(10)
    assert not service.started.is_set()  # the pass never ran
    # nothing to come, and the table is not "being gathered behind": a model reading it gathers it
    assert inputs.first_pass_to_come() is False and not inputs._gathered_behind("s.orders")


def test_none_to_come_when_automatic_gathering_is_off():
    """`stats.auto_gather: false` runs no first pass: nothing waits for one."""
    inputs = InputGatherer(PassThatWaits(), auto_gather=False)
    inputs.read_project(GRAPH, ["model.p.mart"])
    assert inputs.first_pass_to_come() is False


def test_a_save_behind_the_builds_does_not_wait_for_a_pass_when_gathering_is_off(monkeypatch):
    """The adapter's saver (`_after_first_pass`) with `stats.auto_gather: false`: it used to wait
    for a pass that never came until the invocation's end, so the run's outcomes were saved
    after its last model instead of behind the builds."""
    from dbt.adapters.hiveopt import impl
    from dbt.adapters.hiveopt.impl import HiveoptAdapter

    monkeypatch.setattr(impl, "_builds_models", lambda: True)
    adapter = HiveoptAdapter.__new__(HiveoptAdapter)  # no connections, no config: the methods alone
    adapter._hiveopt_lock = threading.RLock()
    adapter._inputs = None
    adapter._save_now = threading.Event()  # the invocation's end: never, here
    adapter._stats_settings = lambda: {"auto_gather": False}
    adapter._run_sql = lambda sql: []
    adapter.inputs.read_project(GRAPH, ["model.p.mart"])
    saver = threading.Thread(target=HiveoptAdapter._after_first_pass, args=(adapter,), daemon=True)
    saver.start()
    saver.join(1.0)
    waiting = saver.is_alive()
    adapter._save_now.set()  # as the invocation's end would
    saver.join(10)
    assert not waiting  # before: it waited until the end of the invocation


def test_a_save_behind_the_seeds_counts_them_before_it_waits_for_the_first_pass(monkeypatch):
    """The seeds' held rows are counted (their catalog reads: DESCRIBE, on the session an ANALYZE
    ... NOSCAN) as soon as the save behind their loads starts, while the first pass is still to
    come; only the write job waits for the pass. Counted after it, they ran on the path of the
    first mart that read the seeds (revenue_by_nation: 1.3 s in a first build of the example)."""
    from dbt.adapters.hiveopt import impl
    from dbt.adapters.hiveopt.impl import HiveoptAdapter

    monkeypatch.setattr(impl, "_builds_models", lambda: True)
    monkeypatch.setattr(impl, "SAVE_BEHIND_AFTER_SECONDS", 0.0)
    service = PassThatWaits()
    calls = []
    service.settle_held = lambda: calls.append(("settled", inputs.first_pass_to_come()))
    service.flush = lambda: calls.append(("saved", inputs.first_pass_to_come()))
    inputs = InputGatherer(service)
    inputs.read_project(GRAPH, ["model.p.mart"])
    adapter = HiveoptAdapter.__new__(HiveoptAdapter)  # no connections, no config: the methods alone
    adapter._hiveopt_lock = threading.RLock()
    adapter._inputs = inputs
    adapter._save_now = threading.Event()
    saver = threading.Thread(target=HiveoptAdapter._save_soon, args=(adapter,), daemon=True)
    saver.start()
    saver.join(0.5)
    assert calls == [("settled", True)]  # counted while the pass is to come; the save waits
    pass_thread = threading.Thread(target=inputs._first_pass, args=({},))
    pass_thread.start()
    service.release.set()
    pass_thread.join(10)
    saver.join(10)
    assert calls == [("settled", True), ("saved", False)]
