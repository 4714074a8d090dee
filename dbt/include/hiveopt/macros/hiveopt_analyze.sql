{#-- dbt run-operation hiveopt_analyze --args '{relations: [db.table], models: [name], sources: [src.table]}'
     Gathers statistics now for the named relations. --#}
{% macro hiveopt_analyze(relations=none, models=none, sources=none) %}
  {%- set names = [] -%}
  {%- for name in (relations or []) -%}{%- do names.append(name) -%}{%- endfor -%}
  {%- if execute -%}
    {%- for node in graph.nodes.values() -%}
      {%- if node.resource_type in ['model', 'seed', 'snapshot'] and node.name in (models or []) -%}
        {%- do names.append(node.schema ~ '.' ~ node.alias) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- for source in graph.sources.values() -%}
      {%- if (source.source_name ~ '.' ~ source.name) in (sources or []) -%}
        {%- do names.append(source.schema ~ '.' ~ source.identifier) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if names | length == 0 -%}
      {{ exceptions.raise_compiler_error("hiveopt_analyze: name relations, models or sources to analyze") }}
    {%- endif -%}
    {%- for line in adapter.hiveopt_analyze(names, graph) -%}
      {{ log(line, info=True) }}
    {%- endfor -%}
  {%- endif -%}
{% endmacro %}
