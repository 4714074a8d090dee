"""What statistics gathering cost a dbt invocation, against the time it spent building.

From the models' records (target/hiveopt/<model>.json) and dbt's seconds per model and seed
(run_results.json's `execution_time`). A model's seconds hold what hiveopt did on its path: the
statistics it gathered before or after its build, and the time it waited while another model's
thread ran the invocation's first statistics pass. Neither is building. The waits are idle
threads, so they count on neither side: three marts that wait 5 s for one 5 s pass cost the
invocation 5 s of gathering, not 20. A pass run behind the builds (`stats.first_pass: behind`)
is in no model's seconds: it is gathering, and nothing is taken off the building for it.

>>> records = [
...     {"statistics_gathering": {"(the invocation's first statistics pass)": {"seconds": 5.0}}},
...     {"statistics_gathering": {"(waited for the invocation's first statistics pass)": {"waited_seconds": 4.0}}},
...     {"after_build_statistics": {"db.t": {"gathered": True, "gather_seconds": 1.0}}},
... ]
>>> share = statistics_share(records, built_seconds=60.0)
>>> share.gathered, share.waited, share.building, f"{share.percent:.0f}%"
(6.0, 4.0, 50.0, '12%')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class StatisticsShare:
    gathered: float  # seconds of gathering: passes, key-detail passes, after-build passes
    waited: float  # seconds models waited for the first pass another model's thread ran
    waiting_models: int
    building: float  # the models' and seeds' seconds without gathering and waits

    @property
    def percent(self) -> float:
        return 100 * self.gathered / max(self.building, 1e-9)

    def line(self) -> str:
        """The closing line of `hiveopt summary`."""
        waits = ""
        if self.waiting_models:
            models = "model" if self.waiting_models == 1 else "models"
            waits = (
                f"; {self.waiting_models} {models} waited {self.waited:.1f} s in all for the first pass, "
                "counted as neither"
            )
        return (
            f"statistics gathering: {self.gathered:.1f} s against {self.building:.1f} s of building the models "
            f"and seeds ({self.percent:.0f}%{waits})"
        )


@dataclass(frozen=True)
class ModelStatistics:
    """One model's record: the statistics gathered on its path before its build (`before`), by a
    pass behind the builds that it started (`behind`: not in its seconds), its own after its build
    (`after`), and its wait for the first pass that another model's thread ran (`waited`)."""

    before: float = 0.0
    behind: float = 0.0
    after: float = 0.0
    waited: float = 0.0

    @property
    def gathered(self) -> float:
        return self.before + self.behind + self.after

    @property
    def on_path(self) -> float:
        """What the gathering took of the model's own seconds."""
        return self.before + self.after


def model_statistics(record: dict) -> ModelStatistics:
    """What a model's record says of its statistics.

    >>> waited = {"(waited ...)": {"waited_seconds": 2.0}}
    >>> behind = {"(... behind ...)": {"seconds": 7.0, "behind": True}}
    >>> model_statistics({"statistics_gathering": {**waited, **behind, "db.t": {"seconds": 1.5}}})
    ModelStatistics(before=1.5, behind=7.0, after=0.0, waited=2.0)
    """
    before = behind = after = waited = 0.0
    for entry in (record.get("statistics_gathering") or {}).values():
        if not isinstance(entry, dict):
            continue
        seconds = float(entry.get("seconds") or 0)
        if entry.get("behind"):
            behind += seconds
        else:
            before += seconds
        waited += float(entry.get("waited_seconds") or 0)
    for cost in (record.get("after_build_statistics") or {}).values():
        if isinstance(cost, dict) and cost.get("gathered") is not False:
            after += float(cost.get("gather_seconds") or 0)
    return ModelStatistics(before, behind, after, waited)


def statistics_share(records: Iterable[dict], built_seconds: float) -> StatisticsShare:
    """`records`: the invocation's model records; `built_seconds`: dbt's execution time of its
    models and seeds, summed."""
    models = [model_statistics(record) for record in records]
    waits = [m.waited for m in models if m.waited]
    building = max(built_seconds - sum(m.on_path for m in models) - sum(waits), 0.0)
    return StatisticsShare(sum(m.gathered for m in models), sum(waits), len(waits), building)
