{#-
  dbt-spark's file_format='hudi' nodes (table and incremental models, seeds, snapshots), written
  by the engine through the same hand-off as the hudi_* materializations. Every such node enters
  here: adapter.hudi_file_format_plan reads dbt-spark's config and Hudi's Spark SQL `options`
  (primaryKey, type, preCombineField, payloadClass, hoodie.*) and says which hudi_* write gives
  dbt-spark's semantics (see dbt/adapters/hudi/spark_compat.py); dbt_hudi_materialize runs it.
-#}

{% macro dbt_hudi_is_file_format(node_config=none) %}
  {%- set value = (node_config or config).get('file_format') -%}
  {{ return(value is string and value | trim | lower == 'hudi') }}
{% endmacro %}


{#- `sql` replaces the node's SELECT (seeds, snapshots); `snapshot_key` is a snapshot's
    dbt_scd_id column, its record key. -#}
{% macro dbt_hudi_materialize_file_format(kind, sql=none, snapshot_key='dbt_scd_id') %}
  {%- do adapter.hudi_require_session() -%}
  {%- if model.get('language', 'sql') != 'sql' -%}
    {%- do exceptions.raise_compiler_error(
        "Model '" ~ model.name ~ "': file_format='hudi' is written from SQL models only") -%}
  {%- endif -%}
  {%- set plan = adapter.hudi_file_format_plan(this, kind, model.config, snapshot_key) -%}
  {%- if sql is not none -%}
    {%- do plan.update({'sql': sql}) -%}
  {%- endif -%}
  {{ return(dbt_hudi_materialize(plan['materialization'], plan)) }}
{% endmacro %}
