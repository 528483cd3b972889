{#- Every config error of a Hudi model, at once, as a compiler error naming the model. -#}
{% macro dbt_hudi_validate_config(materialization, hudi_config=none) %}
  {{ return(adapter.hudi_validate_config(this, materialization,
                                         model.config if hudi_config is none else hudi_config)) }}
{% endmacro %}


{#- A persistent view cannot read a Hudi model: its snapshot is a session view (the files of a
    Hudi snapshot change with every commit, so no catalog object lists them, see publish.py), and
    Spark refuses persistent views over temporary objects. Fail before any DDL, saying what works
    instead. -#}
{% macro hudi__create_view_as(relation, sql) -%}
  {%- if 'hudi_snapshot__' in sql -%}
    {%- do exceptions.raise_compiler_error(
        "View model '" ~ relation.identifier ~ "' selects from a Hudi model. Spark cannot keep a "
        ~ "persistent view over a Hudi snapshot (it is read by the engine in each session, at the "
        ~ "latest commit). Materialize '" ~ relation.identifier ~ "' as 'table', 'incremental' or "
        ~ "a hudi_* materialization (or 'ephemeral')."
    ) -%}
  {%- endif -%}
  {%- if 'hudi_source__' in sql -%}
    {%- do exceptions.raise_compiler_error(
        "View model '" ~ relation.identifier ~ "' selects from a Hudi source (external.file_format "
        ~ "'hudi'). Spark cannot keep a persistent view over it (the source is read by the engine "
        ~ "in each session, at its latest snapshot). Materialize '" ~ relation.identifier
        ~ "' as 'table', 'incremental' or a hudi_* materialization (or 'ephemeral')."
    ) -%}
  {%- endif -%}
  {{ spark__create_view_as(relation, sql) }}
{%- endmacro %}
