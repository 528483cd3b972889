{#-
  file_format='hudi' snapshots keep their SCD2 history in a copy-on-write Hudi table whose record
  key is dbt_scd_id. The first run writes dbt's initial history (bulk_insert); later runs upsert
  exactly the rows dbt-spark's MERGE INTO would change: the current versions dbt closes (their
  dbt_valid_to set, for updates and hard deletes) and the new versions dbt inserts. The staged
  rows are cached once, so the snapshot time in them is one value for the whole write. Any other
  file_format is dbt-spark's snapshot.
-#}
{% materialization snapshot, adapter='hudi' %}
  {%- if not dbt_hudi_is_file_format() -%}
    {{ return(materialization_snapshot_spark()) }}
  {%- endif -%}
  {%- do adapter.hudi_require_session() -%}
  {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
  {%- set target_exists, target_relation = get_or_create_relation(
        database=none, schema=model.schema, identifier=model.get('alias', model.get('name')),
        type='table') -%}
  {%- if not adapter.check_schema_exists(model.database, model.schema) -%}
    {%- do create_schema(model.schema) -%}
  {%- endif -%}
  {%- set strategy_macro = strategy_dispatch(config.get('strategy')) -%}
  {%- set strategy = strategy_macro(model, 'snapshotted_data', 'source_data', model['config'],
                                    target_exists) -%}
  {%- if not target_exists -%}
    {%- set rows_sql = build_snapshot_table(strategy, model['compiled_code']) -%}
  {%- else -%}
    {{ adapter.valid_snapshot_target(target_relation, columns) }}
    {#- the history is read from the table's latest committed snapshot, not its catalog entry -#}
    {%- set rows_sql = dbt_hudi_snapshot_changes_sql(strategy, target_relation, columns,
                                                    adapter.hudi_snapshot_relation(target_relation)) -%}
  {%- endif -%}
  {%- set rows_view = make_temp_relation(target_relation, '__dbt_hudi_snapshot') -%}
  {% call statement('dbt_hudi_snapshot_rows') -%}
    cache table {{ rows_view }} as {{ rows_sql }}
  {%- endcall %}
  {%- set result = dbt_hudi_materialize_file_format('snapshot', 'select * from ' ~ rows_view,
                                                     columns.dbt_scd_id) -%}
  {% call statement('dbt_hudi_snapshot_rows_drop') -%}
    uncache table if exists {{ rows_view }}
  {%- endcall %}
  {%- do dbt_hudi_drop_source(rows_view) -%}
  {%- if target_exists -%}
    {%- do dbt_hudi_drop_source(make_temp_relation(target_relation, '__dbt_hudi_staged')) -%}
  {%- endif -%}
  {{ return(result) }}
{% endmaterialization %}


{#- The rows dbt-spark's snapshot MERGE INTO changes, as full rows of the snapshot table:
    closed versions (dbt_valid_to from the staging row) and inserted versions. A source column the
    table does not have yet is added (null in the closed versions). -#}
{% macro dbt_hudi_snapshot_changes_sql(strategy, target_relation, columns, read_relation) %}
  {%- set staged = make_temp_relation(target_relation, '__dbt_hudi_staged') -%}
  {% call statement('dbt_hudi_snapshot_staging') -%}
    create or replace temporary view {{ staged }} as
    {{ snapshot_staging_table(strategy, model['compiled_code'], read_relation) }}
  {%- endcall %}
  {%- set internal = ['dbt_change_type', 'dbt_unique_key'] -%}
  {%- set staged_names = [] -%}
  {%- for name in run_query('select * from ' ~ staged ~ ' limit 0').column_names -%}
    {%- if name | lower not in internal and not (name | lower).startswith('dbt_unique_key_') -%}
      {%- do staged_names.append(name) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set target_names = adapter.get_columns_in_relation(target_relation) | map(attribute='name') | list -%}
  {%- set target_lower = target_names | map('lower') | list -%}
  {%- set staged_lower = staged_names | map('lower') | list -%}
  {%- set out = [] -%}
  {%- for name in target_names -%}{%- do out.append(name) -%}{%- endfor -%}
  {%- for name in staged_names if name | lower not in target_lower -%}{%- do out.append(name) -%}{%- endfor -%}
  {%- set valid_to = columns.dbt_valid_to | lower -%}
  select
  {%- for name in out %}
    {% if name | lower == valid_to -%} SRC.{{ adapter.quote(name) }}
    {%- elif name | lower in target_lower -%} DEST.{{ adapter.quote(name) }}
    {%- else -%} null {%- endif %} as {{ adapter.quote(name) }}{{ ',' if not loop.last }}
  {%- endfor %}
  from {{ read_relation }} as DEST
  join {{ staged }} as SRC
    on SRC.{{ columns.dbt_scd_id }} = DEST.{{ columns.dbt_scd_id }}
  where
  {%- if config.get('dbt_valid_to_current') %}
    (DEST.{{ columns.dbt_valid_to }} = {{ config.get('dbt_valid_to_current') }}
     or DEST.{{ columns.dbt_valid_to }} is null)
  {%- else %}
    DEST.{{ columns.dbt_valid_to }} is null
  {%- endif %}
    and SRC.dbt_change_type in ('update', 'delete')
  union all
  select
  {%- for name in out %}
    {% if name | lower in staged_lower -%} SRC.{{ adapter.quote(name) }}
    {%- else -%} null {%- endif %} as {{ adapter.quote(name) }}{{ ',' if not loop.last }}
  {%- endfor %}
  from {{ staged }} as SRC
  where SRC.dbt_change_type = 'insert'
{% endmacro %}


{#- dbt's get_columns_in_relation() returns columns (name, data_type) on every adapter; dbt-spark's
    returns the raw rows of DESCRIBE EXTENDED, so dbt's snapshot staging SQL (hard_deletes=
    'new_record') reads no column names and writes deletion records with null columns. -#}
{% macro hudi__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
