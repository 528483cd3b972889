{#- +file_format: hudi seeds: the CSV rows, typed as dbt-spark types them (column_types
    included), are written as a fresh Hudi table on every `dbt seed` (bulk_insert). -#}
{% materialization seed, adapter='hudi' %}
  {%- if not dbt_hudi_is_file_format() -%}
    {{ return(materialization_seed_default()) }}
  {%- endif -%}
  {%- do adapter.hudi_require_session() -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}
  {%- set rows_view = make_temp_relation(this, '__dbt_hudi_seed') -%}
  {%- do adapter.hudi_stage_seed(agate_table, config.get('column_types') or {}, rows_view.identifier) -%}
  {%- set result = dbt_hudi_materialize_file_format('seed', 'select * from ' ~ rows_view) -%}
  {%- do dbt_hudi_drop_source(rows_view) -%}
  {{ return(result) }}
{% endmaterialization %}
