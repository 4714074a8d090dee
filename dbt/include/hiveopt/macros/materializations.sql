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
     the rows dbt read from the CSV (small by design), with no Spark job. Those rows are the table
     dbt's seed materialization read and stored for dbt's seed task (`store_result`): taken and
     stored back as they were, not read again (agate's CSV reading infers every cell's type: 4 ms
     for a 100-row seed of 6 columns, 31 ms for 1,000 rows, 0.3 s for 10,000). --#}
{% materialization seed, adapter='hiveopt' %}
  {%- do adapter.hiveopt_before_build(model, graph) -%}
  {%- set result = materialization_seed_default() -%}
  {%- set stored = load_result('agate_table') -%}
  {%- if stored is not none -%}
    {%- do store_result('agate_table', response=stored['response'], agate_table=stored['table']) -%}
    {%- set loaded = stored['table'] -%}
  {%- else -%}
    {%- set loaded = load_agate_table() -%}
  {%- endif -%}
  {%- do adapter.hiveopt_after_build(result['relations'], model, config.get('hiveopt'), graph, loaded) -%}
  {{ return(result) }}
{% endmaterialization %}
