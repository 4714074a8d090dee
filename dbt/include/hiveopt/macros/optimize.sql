{#-- Every model's compiled SELECT passes through the optimizer here, then dbt-spark builds it.
     DDL and DML plumbing (create/insert/merge) stays dbt-spark's and is never parsed. --#}

{% macro hiveopt__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if language == 'sql' -%}
    {%- set compiled_code = adapter.optimize_sql(compiled_code, relation, model, config.get('hiveopt'), config.get('materialized'), temporary, graph, selected_resources) -%}
  {%- endif -%}
  {{ spark__create_table_as(temporary, relation, compiled_code, language) }}
{%- endmacro %}


{% macro hiveopt__create_view_as(relation, sql) -%}
  {%- set sql = adapter.optimize_sql(sql, relation, model, config.get('hiveopt'), 'view', false, graph, selected_resources) -%}
  {{ spark__create_view_as(relation, sql) }}
{%- endmacro %}
