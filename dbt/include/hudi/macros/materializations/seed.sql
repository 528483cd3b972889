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


{#- dbt-spark's seed rows, with empty CSV cells loaded as NULL: its session cursor binds a Python
    None as the string 'None', so an empty cell would become the text 'None'. -#}
{% macro hudi__load_csv_rows(model, agate_table) %}
  {%- set column_override = model['config'].get('column_types', {}) -%}
  {%- set types = [] -%}
  {%- for col_name in agate_table.column_names -%}
    {%- do types.append(column_override.get(col_name, adapter.convert_type(agate_table, loop.index0))) -%}
  {%- endfor -%}
  {%- set statements = [] -%}
  {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
    {%- set bindings = [] -%}
    {%- set sql -%}
      insert into {{ this.render() }} values
      {% for row in chunk -%}
        ({%- for value in row -%}
          {%- if value is none -%} cast(null as {{ types[loop.index0] }})
          {%- else -%}{%- do bindings.append(value) -%} cast({{ get_binding_char() }} as {{ types[loop.index0] }})
          {%- endif -%}{%- if not loop.last -%},{%- endif -%}
        {%- endfor -%}){%- if not loop.last -%},{%- endif %}
      {% endfor %}
    {%- endset -%}
    {%- do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) -%}
    {%- if loop.index0 == 0 -%}{%- do statements.append(sql) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(statements[0]) }}
{% endmacro %}
