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


{#-- dbt-spark's view materialization. A view holds no data: nothing is gathered after it; its
     catalog entry is read behind the build when a model this invocation builds next reads it. --#}
{% materialization view, adapter='hiveopt' %}
  {%- set result = materialization_view_spark() -%}
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
