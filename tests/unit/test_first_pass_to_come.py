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
