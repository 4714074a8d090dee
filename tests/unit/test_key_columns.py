"""The columns of each relation the project's models use as join or filter keys, through views and
ephemeral models (key_columns.key_words_downstream): what a first statistics pass details."""

from dbt.adapters.hiveopt.key_columns import key_words_downstream


def _graph(models, sources=("orders", "customer")):
    """dbt's graph: sources tpch.<name>, and models {name: (materialized, code, [parents])}."""
    return {
        "sources": {
            f"source.p.tpch.{name}": {"resource_type": "source", "schema": "tpch", "identifier": name}
            for name in sources
        },
        "nodes": {
            f"model.p.{name}": {
                "resource_type": "model",
                "schema": "a",
                "name": name,
                "config": {"materialized": materialized},
                "raw_code": code,
                "depends_on": {"nodes": [p if p.startswith("source.") else f"model.p.{p}" for p in parents]},
            }
            for name, (materialized, code, parents) in models.items()
        },
    }


STAGING = {
    "stg_orders": (
        "view",
        "{{ config(materialized='view') }}\n"
        "select o_orderkey as order_key, o_custkey as customer_key, o_orderdate as order_date, "
        "o_comment as note from {{ source('tpch', 'orders') }}",
        ["source.p.tpch.orders"],
    ),
    "stg_customers": (
        "view",
        "select c_custkey as customer_key, c_name as customer_name, c_mktsegment as segment "
        "from {{ source('tpch', 'customer') }}",
        ["source.p.tpch.customer"],
    ),
}


def test_keys_are_followed_up_through_a_views_aliases():
    graph = _graph(
        {
            **STAGING,
            "mart": (
                "table",
                "select c.customer_name, count(*) from {{ ref('stg_customers') }} c "
                "join {{ ref('stg_orders') }} o on o.customer_key = c.customer_key "
                "where o.order_date >= date '{{ var(\"start\") }}' "
                "and c.segment < (select max(o2.note) from {{ ref('stg_orders') }} o2 "
                "where o2.customer_key = o.customer_key) "
                "group by c.customer_name",
                ["stg_customers", "stg_orders"],
            ),
        }
    )
    keys, ranges = key_words_downstream(graph)
    assert {"o_custkey", "o_orderdate"} <= keys["tpch.orders"]
    # a histogram serves o_orderdate (>=); o_custkey is only joined on (names of the view's own
    # columns come along: the pass keeps the table's)
    assert "o_orderdate" in ranges["tpch.orders"] and "o_custkey" not in ranges["tpch.orders"]
    assert "c_mktsegment" in ranges["tpch.customer"]  # compared with a subquery, whose columns are not
    assert not {"o_orderkey", "o_comment"} & keys["tpch.orders"]  # selected, never a key
    assert "c_custkey" in keys["tpch.customer"] and "c_name" not in keys["tpch.customer"]  # only grouped on


def test_comma_joins_using_ctes_and_ephemeral_models_count_as_keys():
    graph = _graph(
        {
            **STAGING,
            "recent": (
                "ephemeral",
                "with o as (select order_key as k, customer_key from {{ ref('stg_orders') }}) "
                "select k, customer_key from o",
                ["stg_orders"],
            ),
            "comma": (
                "table",
                "select 1 from {{ ref('recent') }} r, {{ ref('stg_customers') }} c "
                "where r.customer_key = c.customer_key",
                ["recent", "stg_customers"],
            ),
            "using": (
                "table",
                "select segment from {{ ref('stg_customers') }} join {{ ref('recent') }} using (k)",
                ["stg_customers", "recent"],
            ),
        }
    )
    keys, _ = key_words_downstream(graph)
    assert {"o_custkey", "o_orderkey"} <= keys["tpch.orders"]  # k -> order_key -> o_orderkey
    assert "c_custkey" in keys["tpch.customer"]


def test_a_table_model_stops_the_walk_and_unparsed_code_counts_every_word():
    graph = _graph(
        {
            **STAGING,
            "orders_table": ("table", "select * from {{ ref('stg_orders') }}", ["stg_orders"]),
            "reader": (
                "table",
                "select 1 from {{ ref('orders_table') }} t join x on t.order_key = x.k",
                ["orders_table"],
            ),
            "odd": ("table", "select note from {{ ref('stg_orders') }} where (((", ["stg_orders"]),
        }
    )
    keys, _ = key_words_downstream(graph)
    assert "order_key" in keys["a.orders_table"]
    # orders_table holds data: its readers' keys are its own, not its source's; the code that
    # does not parse names note, so o_comment's view column is a key word, and so are its words
    assert "o_orderkey" not in keys["tpch.orders"] and "note" in keys["tpch.orders"]
