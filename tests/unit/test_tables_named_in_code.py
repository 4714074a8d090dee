"""Tables a model names in its code (`db.table`, not through ref() or source()) count as what it
reads (project_graph.with_tables_named_in_code): a first statistics pass reads them with the
project's columns and details only its keys, as it does for sources."""

from dbt.adapters.hiveopt.key_columns import key_words_downstream
from dbt.adapters.hiveopt.project_graph import (
    NAMED_IN_CODE,
    read_unbuilt,
    sources_read,
    sql_of_code,
    tables_named,
    with_tables_named_in_code,
    words_downstream,
)


def test_names_after_from_join_and_commas_of_every_from_clause():
    sql = """
        with recent as (select o_orderkey from tpch.orders where o_orderdate > date '1998-01-01')
        select l.l_orderkey, s.s_name
        from tpch.lineitem l, (select s_suppkey, s_name from `tpch`.`supplier`) s, spark_catalog.tpch.nation n
        left join tpch.region r on n.n_regionkey = r.r_regionkey, recent
        where l.l_suppkey = s.s_suppkey and l.l_orderkey in (select o_orderkey from recent)
          and exists (select 1 from tpch.part p where p.p_partkey = l.l_partkey)
    """
    assert tables_named(sql) == {
        "tpch.orders",
        "tpch.lineitem",
        "tpch.supplier",
        "tpch.nation",
        "tpch.region",
        "tpch.part",
    }


def test_no_table_where_from_is_a_function_argument_a_string_or_a_comment():
    sql = """
        select extract(year from o.o_orderdate) as y, trim(both ' ' from o.o_clerk) as clerk,
               substring(o.o_comment from 2) as c, 'select * from fake.table' as s
        from orders o  -- join fake.other
        where o.o_custkey = 1
        group by 1, 2, 3, 4
    """
    assert tables_named(sql) == set()


def test_set_operations_and_incremental_filters():
    code = (
        "select k from db.a union all select k from db.b "
        "{% if is_incremental() %} where k > (select max(k) from {{ this }}) {% endif %}"
    )
    assert tables_named(sql_of_code(code)) == {"db.a", "db.b"}


def _graph():
    """A model naming a source table in its code, one reading another model by name, and one
    using source() for a third table."""
    return {
        "sources": {
            "source.p.tpch.customer": {"resource_type": "source", "schema": "tpch", "identifier": "customer"},
        },
        "nodes": {
            "model.p.stg_orders": {
                "resource_type": "model",
                "schema": "analytics",
                "name": "stg_orders",
                "config": {"materialized": "view"},
                "raw_code": "select o_orderkey, o_custkey, o_orderdate, o_comment from tpch.orders",
                "depends_on": {"nodes": []},
            },
            "model.p.mart": {
                "resource_type": "model",
                "schema": "analytics",
                "name": "mart",
                "config": {"materialized": "table"},
                "raw_code": (
                    "select c.c_name, count(*) as n from analytics.stg_orders o "
                    "join {{ source('tpch', 'customer') }} c on o.o_custkey = c.c_custkey "
                    "where o.o_orderdate >= date '1998-01-01' group by c.c_name"
                ),
                "depends_on": {"nodes": ["source.p.tpch.customer"]},
            },
        },
    }


def test_a_named_table_is_read_as_a_source_is():
    graph = with_tables_named_in_code(_graph())
    orders = f"{NAMED_IN_CODE}.tpch.orders"
    # The view names the source table; the mart names the view, a model of the project.
    assert graph["nodes"]["model.p.stg_orders"]["depends_on"]["nodes"] == [orders]
    assert graph["nodes"]["model.p.mart"]["depends_on"]["nodes"] == ["source.p.tpch.customer", "model.p.stg_orders"]
    # What the first pass reads and details: the mart's keys, through the view, as for source().
    keys, ranges = key_words_downstream(graph)
    assert {"o_custkey", "o_orderdate"} <= keys["tpch.orders"]
    assert "o_comment" not in keys["tpch.orders"]
    assert "o_orderdate" in ranges["tpch.orders"]
    assert {"o_orderkey", "o_custkey", "o_orderdate"} <= words_downstream(graph)["tpch.orders"]
    # The tables of the invocation's first statistics pass, and the sources described ahead.
    assert read_unbuilt(graph, ["model.p.mart"]) == (["tpch.customer", "tpch.orders"], ["analytics.stg_orders"])
    assert sources_read(graph) == ["tpch.customer", "tpch.orders"]


def test_the_graph_given_is_not_changed_and_a_graph_without_named_tables_is_returned_as_is():
    given = _graph()
    with_tables_named_in_code(given)
    assert given == _graph()
    plain = {"nodes": {"model.p.m": {"resource_type": "model", "raw_code": "select 1 as x from {{ ref('y') }}"}}}
    assert with_tables_named_in_code(plain) is plain


def test_a_python_model_names_no_table():
    code = 'def model(dbt, session):\n    return session.sql("select * from db.t").join(dbt.ref("x"), "k")\n'
    graph = {"nodes": {"model.p.py": {"resource_type": "model", "language": "python", "raw_code": code}}}
    assert with_tables_named_in_code(graph) is graph
