"""A project shaped like dbt's own jaffle_shop: three seeds, three staging views in dbt's
import-CTE style, two table marts (left joins, a pivot of payments by method), 20 data tests,
`threads: 4`. No rule has anything to gain on it at this size: it measures what hiveopt costs a
project where it optimizes nothing. `dbt build --full-refresh`, dbt-spark against hiveopt
(feedback explore) in one process and one warm session, paired rounds in ABBA order, each after a
full GC, medians; the marts' rows compared at the end.

    .venv/bin/python bench/jaffle_shop.py --rounds 7 [--rows 100]

The project is written into bench/results/jaffle_shop/ (models ours, in jaffle_shop's shape; seeds
generated, `--rows` customers with about as many orders and payments).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import textwrap
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from project_build import median, paired_line  # noqa: E402

FOLDER = os.path.join(harness.RESULTS, "jaffle_shop")
PROJECT = os.path.join(FOLDER, "project")
METHODS = ["credit_card", "coupon", "bank_transfer", "gift_card"]
STATUSES = ["placed", "shipped", "completed", "return_pending", "returned"]
VARIANTS = {"dbt-spark": "spark", "hiveopt": "hiveopt"}
MODELS = ["stg_customers", "stg_orders", "stg_payments", "customers", "orders"]
SEEDS = ["raw_customers", "raw_orders", "raw_payments"]

FILES = {
    "dbt_project.yml": """
        name: jaffle_shape
        version: "1.0"
        config-version: 2
        profile: jaffle_shape
        models:
          jaffle_shape:
            +materialized: table
            staging:
              +materialized: view
        """,
    "profiles.yml": """
        jaffle_shape:
          target: hiveopt
          outputs:
            hiveopt:
              type: hiveopt
              method: session
              schema: jaffle_hiveopt
              threads: 4
              optimizer:
                feedback: explore
                stats:
                  schema: jaffle_hiveopt_stats
            spark:
              type: spark
              method: session
              host: localhost
              schema: jaffle_spark
              threads: 4
        """,
    "models/staging/stg_customers.sql": """
        with source as (
            select * from {{ ref('raw_customers') }}
        ),
        renamed as (
            select id as customer_id, first_name, last_name
            from source
        )
        select * from renamed
        """,
    "models/staging/stg_orders.sql": """
        with source as (
            select * from {{ ref('raw_orders') }}
        ),
        renamed as (
            select id as order_id, user_id as customer_id, order_date, status
            from source
        )
        select * from renamed
        """,
    "models/staging/stg_payments.sql": """
        with source as (
            select * from {{ ref('raw_payments') }}
        ),
        renamed as (
            select id as payment_id, order_id, payment_method,
                   -- cents to dollars
                   amount / 100 as amount
            from source
        )
        select * from renamed
        """,
    "models/customers.sql": """
        with customers as (
            select * from {{ ref('stg_customers') }}
        ),
        orders as (
            select * from {{ ref('stg_orders') }}
        ),
        payments as (
            select * from {{ ref('stg_payments') }}
        ),
        customer_orders as (
            select customer_id, min(order_date) as first_order, max(order_date) as most_recent_order,
                   count(order_id) as number_of_orders
            from orders
            group by customer_id
        ),
        customer_payments as (
            select orders.customer_id, sum(amount) as total_amount
            from payments
            left join orders on payments.order_id = orders.order_id
            group by orders.customer_id
        ),
        final as (
            select customers.customer_id, customers.first_name, customers.last_name,
                   customer_orders.first_order, customer_orders.most_recent_order,
                   customer_orders.number_of_orders,
                   customer_payments.total_amount as customer_lifetime_value
            from customers
            left join customer_orders on customers.customer_id = customer_orders.customer_id
            left join customer_payments on customers.customer_id = customer_payments.customer_id
        )
        select * from final
        """,
    "models/orders.sql": """
        {% set payment_methods = METHODS %}
        with orders as (
            select * from {{ ref('stg_orders') }}
        ),
        payments as (
            select * from {{ ref('stg_payments') }}
        ),
        order_payments as (
            select order_id,
                   {% for payment_method in payment_methods -%}
                   sum(case when payment_method = '{{ payment_method }}' then amount else 0 end)
                       as {{ payment_method }}_amount,
                   {% endfor -%}
                   sum(amount) as total_amount
            from payments
            group by order_id
        ),
        final as (
            select orders.order_id, orders.customer_id, orders.order_date, orders.status,
                   {% for payment_method in payment_methods -%}
                   order_payments.{{ payment_method }}_amount,
                   {% endfor -%}
                   order_payments.total_amount as amount
            from orders
            left join order_payments on orders.order_id = order_payments.order_id
        )
        select * from final
        """,
    "models/schema.yml": """
        version: 2
        models:
          - name: customers
            columns:
              - name: customer_id
                data_tests: [unique, not_null]
          - name: orders
            columns:
              - name: order_id
                data_tests: [unique, not_null]
              - name: customer_id
                data_tests:
                  - not_null
                  - relationships: {arguments: {to: ref('customers'), field: customer_id}}
              - name: status
                data_tests:
                  - accepted_values: {arguments: {values: STATUSES}}
              - name: amount
                data_tests: [not_null]
              - name: credit_card_amount
                data_tests: [not_null]
              - name: coupon_amount
                data_tests: [not_null]
              - name: bank_transfer_amount
                data_tests: [not_null]
              - name: gift_card_amount
                data_tests: [not_null]
        """,
    "models/staging/schema.yml": """
        version: 2
        models:
          - name: stg_customers
            columns:
              - name: customer_id
                data_tests: [unique, not_null]
          - name: stg_orders
            columns:
              - name: order_id
                data_tests: [unique, not_null]
              - name: status
                data_tests:
                  - accepted_values: {arguments: {values: STATUSES}}
          - name: stg_payments
            columns:
              - name: payment_id
                data_tests: [unique, not_null]
              - name: payment_method
                data_tests:
                  - accepted_values: {arguments: {values: METHODS}}
        """,
}


def write_project(customers: int, seed: int = 1) -> None:
    """The project's files, and seeds of `customers` customers with about as many orders and a
    few more payments (jaffle_shop's 100, 99 and 113)."""
    for path, text in FILES.items():
        full = os.path.join(PROJECT, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        text = textwrap.dedent(text).lstrip().replace("METHODS", repr(METHODS)).replace("STATUSES", repr(STATUSES))
        with open(full, "w") as handle:
            handle.write(text)
    rng = random.Random(seed)
    seeds = os.path.join(PROJECT, "seeds")
    os.makedirs(seeds, exist_ok=True)
    orders = max(1, customers - customers // 100)
    payments = orders + orders * 14 // 100
    tables = {
        "raw_customers": (
            ["id", "first_name", "last_name"],
            [(i, f"Name{i % 97}", f"{chr(65 + i % 26)}.") for i in range(1, customers + 1)],
        ),
        "raw_orders": (
            ["id", "user_id", "order_date", "status"],
            [
                (
                    i,
                    rng.randint(1, customers),
                    f"2018-{rng.randint(1, 4):02d}-{rng.randint(1, 28):02d}",
                    rng.choice(STATUSES),
                )
                for i in range(1, orders + 1)
            ],
        ),
        "raw_payments": (
            ["id", "order_id", "payment_method", "amount"],
            # every order paid once (the marts' not_null tests hold), some twice (a coupon and a card)
            [
                (i, i if i <= orders else rng.randint(1, orders), rng.choice(METHODS), rng.randint(0, 3000))
                for i in range(1, payments + 1)
            ],
        ),
    }
    for name, (header, rows) in tables.items():
        with open(os.path.join(seeds, f"{name}.csv"), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)


def build(target: str, label: str) -> dict:
    """One `dbt build --full-refresh`: dbt's elapsed time and each node's seconds, by name."""
    path = os.path.join(FOLDER, target, label)
    nodes = harness.dbt(["build", "--full-refresh", "--target", target], path, project_dir=PROJECT)
    with open(os.path.join(path, "run_results.json")) as handle:
        return {"wall": json.load(handle)["elapsed_time"], "nodes": nodes}


def seconds(run: dict, names) -> float:
    return sum(t for name, t in run["nodes"].items() if name in names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--rows", type=int, default=100, help="customers in the seeds (jaffle_shop has 100)")
    args = parser.parse_args()
    os.environ.setdefault("HIVEOPT_FEEDBACK", "explore")
    spark, _ = harness.prepare("0.1")  # the benchmarks' session (TPC-H SF 0.1 is generated once, unused here)
    for schema in ("jaffle_hiveopt", "jaffle_hiveopt_stats", "jaffle_spark"):
        spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    write_project(args.rows)
    first = {variant: build(target, "first") for variant, target in VARIANTS.items()}
    print(
        f"first builds (hiveopt: no statistics yet): dbt-spark {first['dbt-spark']['wall']:.2f} s, "
        f"hiveopt {first['hiveopt']['wall']:.2f} s"
    )
    for label in ("warm1", "warm2"):  # feedback explore: each join measured both ways, then kept
        build("hiveopt", label)
    runs: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
    for round_ in range(args.rounds):
        for variant in harness.round_order(list(VARIANTS), round_):
            harness.settle(spark)
            runs[variant].append(build(VARIANTS[variant], f"round{round_ + 1}"))
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    spark_runs, ours = runs["dbt-spark"], runs["hiveopt"]
    print(f"\njaffle_shop's shape, {args.rows} customers, threads 4, the embedded session, {args.rounds} rounds")
    print(
        f"{'':40} {'dbt-spark s':>12} {'hiveopt s':>10}  paired ratio  (95% range)  (spark/hiveopt, >1: hiveopt faster)"
    )
    print(paired_line("dbt build, wall", [r["wall"] for r in spark_runs], [r["wall"] for r in ours]))
    tests = set(spark_runs[0]["nodes"]) - set(MODELS) - set(SEEDS)
    for title, names in (("models (5)", MODELS), ("seeds (3)", SEEDS), (f"data tests ({len(tests)})", tests)):
        print(paired_line(title, [seconds(r, names) for r in spark_runs], [seconds(r, names) for r in ours]))
    for name in [*MODELS, *SEEDS]:
        a, b = [r["nodes"][name] for r in spark_runs], [r["nodes"][name] for r in ours]
        print(f"  {name:30} {median(a):8.2f} {median(b):8.2f} {median([x / y for x, y in zip(a, b) if y]):8.3f}")
    same = all(
        Counter(tuple(r) for r in spark.sql(f"SELECT * FROM jaffle_spark.{mart}").collect())
        == Counter(tuple(r) for r in spark.sql(f"SELECT * FROM jaffle_hiveopt.{mart}").collect())
        for mart in ("customers", "orders")
    )
    print(f"marts' rows equal (last round): {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
