{#-- Register the generated TPC-H Parquet folders as external tables (schema var tpch_schema, default tpch). The folder is
     HIVEOPT_TPCH_DIR, which `make data` fills. --#}
{% macro register_tpch_sources() %}
  {%- if execute -%}
    {%- set root = env_var('HIVEOPT_TPCH_DIR', '') -%}
    {%- if root == '' -%}
      {{ exceptions.raise_compiler_error("Set HIVEOPT_TPCH_DIR to the TPC-H Parquet folder (make data prints it)") }}
    {%- endif -%}
    {%- set schema = var('tpch_schema', 'tpch') -%}
    {%- do run_query("create database if not exists " ~ schema) -%}
    {%- for table in ['region', 'nation', 'customer', 'orders', 'lineitem', 'part', 'supplier', 'partsupp'] -%}
      {%- set location = (root ~ '/' ~ table) | replace("'", "\\'") -%}
      {%- do run_query("create table if not exists " ~ schema ~ "." ~ table ~ " using parquet location '" ~ location ~ "'") -%}
    {%- endfor -%}
  {%- endif -%}
{% endmacro %}
