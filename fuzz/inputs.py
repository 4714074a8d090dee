"""Random statistics and config for one case.

Statistics are the dict `StatsCatalog.from_dict` accepts: per table a row count (log-uniform
from 1 to 1e10), size_bytes, per column ndv / null_count / min / max / avg_width, heavy_hitters
[[value, count], ...] drawn from the column's real values, histograms. Three moods per table:
*scaled* (the real data's own numbers times a log-uniform factor: coherent, so cost-based rules
fire), *random* (each number drawn on its own) and *absurd* (NULL or wrong-typed heavy hitters,
counts above the row count, min above max, NDV 0, precisions, stale entries). Tables and columns
go missing at random.

Config is the pair of dicts `OptimizerConfig.from_dicts(profile, model)` takes: thresholds,
task slots, skewed_keys (with NULLs, wrong types, a date written '2024/01/05', quotes), sorted
keys, prune bounds small enough to force BETWEEN ranges, rules switched off at random. The
materialization is table, incremental or view.

>>> import random
>>> from fuzz.tables import build_data
>>> rng = random.Random(1)
>>> stats = random_statistics(rng, build_data())
>>> all(name.startswith("fuzz.") for name in stats)
True
>>> from dbt.adapters.hiveopt.optimizer import OptimizerConfig
>>> profile, model = random_config(rng, build_data())
>>> isinstance(OptimizerConfig.from_dicts(profile, model).task_slots, int)
True
"""

from __future__ import annotations

import datetime
import decimal
import math
import random
from typing import Any

from fuzz.tables import DATABASE, TABLES, FuzzData

# The rule names a case draws switches for. reuse_repeated_subqueries is no longer a rule: it stays
# in the draw, so that a seed draws the same cases as before, and its switch is dropped (RETIRED).
RETIRED = ("reuse_repeated_subqueries",)
RULES = (
    "merge_correlated_aggregates",
    "merge_sibling_aggregates",
    "reuse_repeated_subqueries",
    "reorder_joins",
    "rewrite_skew_joins",
    "select_join_algorithms",
    "prune_partitions_from_small_side",
)
FORCE = None
WIDTHS = {"int": 4, "bigint": 8, "double": 8, "date": 4, "string": 12}


def log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _json_value(value: Any) -> Any:
    """Statistics hold JSON values: dates as ISO text, decimals as text or numbers."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def _wrong(rng: random.Random, value: Any, type_: str, refusable: bool = False) -> Any:
    """A value of the wrong type or form for the column: a scalar the statistics parser accepts
    (the rules must cope), or with `refusable` sometimes one it refuses (the store then skips the
    table)."""
    if refusable and rng.random() < 0.2:
        return rng.choice([True, [1], {"v": 1}])
    choices: list[Any] = [None, "not a value", 3.5, "2024/01/05", "it's", "\\", "", -1]
    if isinstance(value, int):
        choices += [str(value), float(value) + 0.5, 2**40, f" {value} "]
    if isinstance(value, str):
        choices += [len(value), value.upper(), value + "'"]
    if type_ == "date":
        choices += ["2024-13-45", "20240105", "2024-01-05T00:00:00", 20240105]
    if type_.startswith("decimal"):
        choices += ["1.234", "1e400", "NaN", 10**20]
    return rng.choice(choices)


def column_statistics(
    rng: random.Random,
    data: FuzzData,
    table: str,
    column: str,
    rows: float,
    mood: str,
    scale: float,
    drop: float = 0.08,
    key: bool = False,
    refusable: bool = False,
) -> dict[str, Any]:
    """One column's statistics; `refusable`: may hold what the statistics parser refuses."""
    col = data.column(table, column)
    freq = data.frequencies[table][column]
    real_rows = len(data.rows[table])
    real_nulls = sum(1 for r in data.rows[table] if r[[c.name for c in TABLES[table]].index(column)] is None)
    # The collector gathers no min, max, heavy hitters or histogram of a boolean column.
    values = sorted(freq, key=lambda v: (str(type(v)), v)) if freq and col.type != "boolean" else []
    out: dict[str, Any] = {}
    if mood == "scaled":
        out["ndv"] = max(1, round(len(freq) * min(scale, rows / max(len(freq), 1)) ** rng.uniform(0, 1)))
        out["null_count"] = round(real_nulls * rows / real_rows)
    else:
        out["ndv"] = round(log_uniform(rng, 1, max(rows, 2) * (10 if mood == "absurd" else 1)))
        out["null_count"] = round(rng.uniform(0, 0.3) * rows) if rng.random() < 0.8 else round(rows * rng.uniform(0, 3))
    if mood == "absurd" and rng.random() < 0.2:
        out["ndv"] = rng.choice([0, 0, None, {"value": 3, "precision": "absent"}, 1e30] + ([-5] if refusable else []))
    if rng.random() < 0.15 and isinstance(out.get("ndv"), (int, float)):
        out["ndv"] = {"value": out["ndv"], "precision": rng.choice(["exact", "estimated", "absent"])}
    if values:
        low, high = values[0], values[-1]
        if mood == "absurd" and rng.random() < 0.3:
            low, high = high, low
        if mood == "absurd" and rng.random() < 0.2:
            low = _wrong(rng, low, col.type, refusable)
        out["min"], out["max"] = _json_value(low), _json_value(high)
    if col.type == "string" or rng.random() < 0.2:
        out["avg_width"] = round(rng.uniform(0, 40), 1) if mood != "absurd" else rng.choice([0, 1e9, 5])
    if values and (key or col.domain or rng.random() < 0.2) and rng.random() < (0.95 if key else 0.4):
        out["heavy_hitters"] = heavy_hitters(rng, freq, real_rows, rows, mood, col.type, refusable)
    elif values and rng.random() < 0.1:
        out["heavy_hitters"] = []
    if values and rng.random() < (0.5 if key else 0.2):
        n = rng.randint(2, 8)
        ordered = sorted(values, key=lambda v: (str(type(v)), v))
        hist = [ordered[min(len(ordered) - 1, round(i * (len(ordered) - 1) / (n - 1)))] for i in range(n)]
        if mood == "absurd" and rng.random() < 0.4:
            rng.shuffle(hist)
            hist.append(_wrong(rng, hist[0], col.type, refusable))
        out["histogram"] = [_json_value(v) for v in hist]
    for key in list(out):
        if rng.random() < drop:
            del out[key]
    return out


def heavy_hitters(
    rng: random.Random, freq, real_rows: int, rows: float, mood: str, type_: str, refusable: bool = False
) -> list[list[Any]]:
    top = freq.most_common(rng.randint(1, 4))
    out = []
    for value, count in top:
        share = count / real_rows
        if mood != "scaled" or rng.random() < 0.2:
            share = rng.choice([share, rng.uniform(0, 1), rng.uniform(0.8, 1.0), rng.uniform(0, 0.1)])
        out.append([_json_value(value), round(share * rows)])
    if mood == "absurd" or rng.random() < 0.05:
        extra = rng.choices(["null", "wrong", "over", "negative", "foreign"], [3, 3, 3, 1 if refusable else 0, 2])[0]
        if extra == "null":
            out.insert(0, [None, round(rows * rng.uniform(0.1, 0.9))])
        elif extra == "wrong":
            out.insert(0, [_wrong(rng, top[0][0], type_, refusable), round(rows * rng.uniform(0.3, 0.95))])
        elif extra == "over":
            out[0][1] = rows * rng.uniform(1.5, 100)
        elif extra == "negative":
            out.append([_json_value(top[-1][0]), -round(rows * 0.5)])
        else:
            out.insert(0, [_json_value(rng.choice(list(freq))), round(rows * rng.uniform(0.5, 1.0))])
    return out


def random_statistics(rng: random.Random, data: FuzzData, keys: dict[str, set] | None = None) -> dict[str, Any]:
    """Statistics of every table. A case's statistics are *clean* (every table and column,
    scaled from the real data around one common factor: cost-based rules decide on coherent
    numbers), *noisy* (moods mixed per table, tables, columns and fields missing at random) or
    *absurd* (mostly absurd tables). `keys`: the query's join and filter key columns by
    `db.table` (prepare.key_columns), for which the adapter's collector gathers heavy hitters and
    histograms: they get them more often."""
    keys = {k.lower(): {c.lower() for c in v} for k, v in (keys or {}).items()}
    quality = FORCE or rng.choices(["clean", "noisy", "absurd"], [6, 3, 1])[0]
    common = log_uniform(rng, 10, 1e7)
    stats: dict[str, Any] = {}
    for table, cols in TABLES.items():
        if quality != "clean" and rng.random() < 0.08:
            continue  # no statistics for this table
        moods = {"clean": [1, 0, 0], "noisy": [5, 3, 1.5], "absurd": [1, 1, 3]}[quality]
        mood = rng.choices(["scaled", "random", "absurd"], moods)[0]
        real_rows = len(data.rows[table])
        if mood == "scaled":
            scale = common * log_uniform(rng, 0.01, 100) if quality == "clean" else log_uniform(rng, 1, 1e7)
            rows = real_rows * scale
        else:
            scale = 1.0
            rows = log_uniform(rng, 1, 1e10)
        rows = round(rows)
        width = 8 + sum(WIDTHS.get(c.type.split("(")[0], 16) for c in cols)
        entry: dict[str, Any] = {"row_count": rows}
        if mood == "scaled" or rng.random() < 0.85:
            factor = log_uniform(rng, 0.2, 5) if mood != "absurd" else rng.choice([1e-9, 1e6, 0, 1])
            entry["size_bytes"] = round(rows * width * factor)
        if mood == "absurd" and rng.random() < 0.3:
            entry["row_count"] = rng.choice([0, 1, None, {"value": rows, "precision": "estimated"}, rows * 1e6])
        elif rng.random() < 0.1:
            entry["row_count"] = {"value": rows, "precision": rng.choice(["exact", "estimated"])}
        columns = {}
        for col in cols:
            if quality != "clean" and rng.random() < 0.12:
                continue
            columns[col.name if rng.random() < 0.9 else col.name.upper()] = column_statistics(
                rng,
                data,
                table,
                col.name,
                max(rows, 1),
                mood,
                scale,
                drop=0.0 if quality == "clean" else 0.08,
                key=col.name in keys.get(f"{DATABASE}.{table}", ()),
                refusable=quality == "absurd",
            )
        entry["columns"] = columns
        if quality != "clean" and rng.random() < 0.03:
            entry["stale"] = True
        name = f"{DATABASE}.{table}"
        stats[name if quality == "clean" or rng.random() < 0.95 else name.upper()] = entry
    return stats


def _skewed_values(rng: random.Random, data: FuzzData, table: str, column: str) -> list[Any]:
    col = data.column(table, column)
    values = data.values(table, column)
    out: list[Any] = []
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.55 and values:
            out.append(_json_value(values[0] if rng.random() < 0.6 else rng.choice(values)))
        elif r < 0.65:
            out.append(None)
        elif r < 0.8:
            out.append(_wrong(rng, values[0] if values else None, col.type))
        else:
            out.append(
                rng.choice(["it's", "back\\slash", "a'b\\'c", "日本語", "2024/01/05", "2024-01-05", 7, "7", 1.5])
            )
    return out


def _sizes(stats: dict[str, Any] | None, tables: list[str]) -> list[float]:
    """The stated sizes in bytes of the tables the query reads (where the statistics state one)."""
    out = []
    for name, entry in (stats or {}).items():
        size = entry.get("size_bytes") if isinstance(entry, dict) else None
        if name.lower().split(".")[-1] in tables and isinstance(size, (int, float)) and size > 0:
            out.append(float(size))
    return out


def random_config(
    rng: random.Random,
    data: FuzzData,
    tables: list[str] | None = None,
    stats: dict[str, Any] | None = None,
    keys: dict[str, set] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(profile block, model config): OptimizerConfig.from_dicts merges them, the model wins.
    `tables`: the tables the query reads (unqualified), which skewed_keys and sorted_keys name
    more often than others, on the query's key columns (`keys`, by `db.table`) more often than on
    others; `stats`: their statistics, around whose sizes the broadcast and pruning thresholds are
    drawn part of the time (where the rules' decisions turn)."""
    read = [t for t in (tables or []) if t in data.tables]
    sizes = _sizes(stats, read)

    def some_table(pool: list[str]) -> str:
        return rng.choice(read) if read and rng.random() < 0.8 else rng.choice(pool)

    config: dict[str, Any] = {}
    if sizes and rng.random() < 0.5:
        config["broadcast_threshold_bytes"] = round(rng.choice(sizes) * log_uniform(rng, 0.001, 2))
    elif rng.random() < 0.6:
        config["broadcast_threshold_bytes"] = round(log_uniform(rng, 1, 1e11))
    if rng.random() < 0.5:
        config["shuffle_hash"] = rng.random() < 0.6
    if rng.random() < 0.3:
        config["shuffle_hash_ratio"] = rng.choice([1.0, 3.0, 0.5, 10.0])
    if rng.random() < 0.3:
        config["shuffle_hash_partition_bytes"] = round(log_uniform(rng, 1, 1e10))
    if rng.random() < 0.3:
        config["shuffle_partitions"] = rng.randint(1, 400)
    if rng.random() < 0.7:
        config["task_slots"] = rng.randint(1, 64)
    if rng.random() < 0.5:
        config["parallelism"] = rng.randint(1, 64)
    if rng.random() < 0.6:
        config["skew_key_min_share"] = rng.choice([1e-9, 0.01, 0.05, 0.3, 0.8, 1.0, rng.uniform(0.001, 1)])
    if rng.random() < 0.35:
        skewed: dict[str, dict[str, list]] = {}
        for _ in range(rng.randint(1, 2)):
            table = some_table(list(data.skew_pool))
            candidates = [c.name for c in data.tables[table] if c.domain]
            if not candidates:  # a corpus table no query joins on (every fuzz table has keys)
                continue
            used = [c for c in candidates if c in (keys or {}).get(f"{data.database}.{table}", ())]
            column = rng.choice(used if used and rng.random() < 0.8 else candidates)
            name = f"{data.database}.{table}" if rng.random() < 0.9 else f"{data.database.upper()}.{table.capitalize()}"
            skewed.setdefault(name, {})[column if rng.random() < 0.9 else column.upper()] = _skewed_values(
                rng, data, table, column
            )
        if skewed:
            config["skewed_keys"] = skewed
    if rng.random() < 0.5:
        sorted_keys = {}
        # Sorted: a set of names iterates in an order that differs between processes (hash seeds).
        for table in sorted({some_table(list(data.tables)) for _ in range(rng.randint(1, 3))}):
            candidates = [c.name for c in data.tables[table] if c.domain]
            if not candidates:
                continue
            used = [c for c in candidates if c in (keys or {}).get(f"{data.database}.{table}", ())]
            chosen = set(rng.sample(candidates, rng.randint(1, min(3, len(candidates)))))
            if used and rng.random() < 0.8:
                chosen.add(rng.choice(used))
            sorted_keys[f"{data.database}.{table}"] = sorted(chosen)
        config["sorted_keys"] = sorted_keys
    if rng.random() < 0.6:
        config["prune_max_values"] = rng.choice([1, 1, 2, 3, 5, 10, 1000])
    if sizes and rng.random() < 0.3:
        config["prune_min_big_bytes"] = round(max(sizes) * log_uniform(rng, 0.01, 1.5))
    elif rng.random() < 0.6:
        config["prune_min_big_bytes"] = rng.choice([0, 1, 1024, round(log_uniform(rng, 1, 1e12))])
    if rng.random() < 0.08:
        config["prune_fetch_values"] = False
    if rng.random() < 0.4:
        switches = {name: rng.random() > 0.25 for name in rng.sample(RULES, rng.randint(1, 3))}
        config["rules"] = {name: on for name, on in switches.items() if name not in RETIRED}
    if rng.random() < 0.005:
        config["enabled"] = False
    # The fuzz tables are tiny on disk: told Spark's own broadcast line, the join rules would defer
    # to Spark on nearly every join. Most cases say Spark broadcasts nothing by itself (drawn last,
    # so that the cases before it draw as they did).
    if rng.random() < 0.8:
        config["spark_broadcast_threshold_bytes"] = -1 if rng.random() < 0.8 else round(log_uniform(rng, 1, 1e9))
    # The reorder's calibrated gate (an estimate 1.7x cheaper) lets few random joins through, and a
    # reorder refused is a reorder not compared on Spark: a third of the cases lower it (drawn last).
    if rng.random() < 0.6:
        config["reorder_min_gain"] = rng.choice([1.0, 1.0, 1.2, 1.7, 3.0])
    # Split between the profile and the model's own config (the model wins where both set a key).
    # A profile with a bad entry stops dbt (dbt debug reports it); a model's bad entry is ignored
    # with a warning: entries the config refuses go to the model.
    from dbt.adapters.hiveopt.optimizer.config import ConfigError, OptimizerConfig

    profile, model = {}, {}
    for key, value in config.items():
        try:
            OptimizerConfig.from_dicts({key: value})
            valid = True
        except (ConfigError, ValueError, TypeError):
            valid = False
        (profile if valid and rng.random() < 0.5 else model)[key] = value
    if rng.random() < 0.1 and "task_slots" in model:
        profile["task_slots"] = rng.randint(1, 64)  # both set it: the model's wins
    return profile, model


def random_materialization(rng: random.Random) -> str:
    return rng.choices(["table", "incremental", "view"], [7, 2, 1])[0]


def random_fetch_mode(rng: random.Random) -> str:
    """How the pre-pass behaves: fetch for real, fail (a timeout), or not run at all."""
    return rng.choices(["fetch", "fail", "none"], [8, 1, 0.5])[0]
