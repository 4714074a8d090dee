{#-- dbt-spark's table and incremental materializations, followed by statistics gathering of the
     relation just built (Hive's hive.stats.autogather) when another model reads it: dbt's graph
     says which. --#}

{% materialization table, adapter='hiveopt', supported_languages=['sql', 'python'] %}
  {%- set result = materialization_table_spark() -%}
  {%- do adapter.hiveopt_after_build(result['relations'], model, config.get('hiveopt'), graph) -%}
  {{ return(result) }}
{% endmaterialization %}


{% materialization incremental, adapter='hiveopt', supported_languages=['sql', 'python'] %}
  {%- set result = materialization_incremental_spark() -%}
  {%- do adapter.hiveopt_after_build(result['relations'], model, config.get('hiveopt'), graph) -%}
  {{ return(result) }}
{% endmaterialization %}


{#-- Seeds get statistics as they load, when a model reads them: exact, counted in Python from
     the rows dbt read from the CSV (small by design), with no Spark job. --#}
{% materialization seed, adapter='hiveopt' %}
  {%- do adapter.hiveopt_before_build(model, graph) -%}
  {%- set result = materialization_seed_default() -%}
  {%- do adapter.hiveopt_after_build(result['relations'], model, config.get('hiveopt'), graph, load_agate_table()) -%}
  {{ return(result) }}
{% endmaterialization %}
