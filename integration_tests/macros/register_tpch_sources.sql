{#-- Register the generated TPC-H Parquet folders as external tables (schema var tpch_schema, default tpch). The folder is
     HIVEOPT_TPCH_DIR, which `make data` fills and the Makefile exports. Once registered (by `make demo`), the tables
     stay in the project's metastore: dbt run by hand in this folder then needs no environment variable. --#}
{% macro register_tpch_sources() %}
  {%- if execute -%}
    {%- set tables = ['region', 'nation', 'customer', 'orders', 'lineitem', 'part', 'supplier', 'partsupp'] -%}
    {%- set schema = var('tpch_schema', 'tpch') -%}
    {%- set root = env_var('HIVEOPT_TPCH_DIR', '') -%}
    {%- do run_query("create database if not exists " ~ schema) -%}
    {%- if root == '' -%}
      {%- set present = run_query("show tables in " ~ schema).columns['tableName'].values() | map('lower') | list -%}
      {%- if tables | reject('in', present) | list | length > 0 -%}
        {{ exceptions.raise_compiler_error("The TPC-H sources are not registered yet: run `make demo` once from the repository root (it generates the data and registers them), or set HIVEOPT_TPCH_DIR to the TPC-H Parquet folder (`make data` prints it)") }}
      {%- endif -%}
    {%- else -%}
      {%- for table in tables -%}
        {%- set location = (root ~ '/' ~ table) | replace("'", "\\'") -%}
        {%- do run_query("create table if not exists " ~ schema ~ "." ~ table ~ " using parquet location '" ~ location ~ "'") -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}
