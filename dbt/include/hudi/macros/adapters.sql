{#- Run-operations on a Hudi model's table; `relation` is 'schema.model' or 'model' (target schema).
      dbt run-operation hudi_compact --args '{relation: analytics.orders_mor}'
      dbt run-operation hudi_clean --args '{relation: orders, options: {hoodie.cleaner.commits.retained: 1}}'
      dbt run-operation hudi_health --args '{relation: orders}'
-#}
{% macro hudi_compact(relation, options={}) %}
  {%- set result = adapter.hudi_compact(relation, options) -%}
  {%- do log('Hudi compaction of ' ~ relation ~ ': ' ~ result['message'], info=True) -%}
  {{ return(result) }}
{% endmacro %}


{#- The health view of the model's table: findings (each with the command that fixes it) and
    facts; `options` are the hoodie.* settings the table's writers use (retention, trigger). -#}
{% macro hudi_health(relation, options={}) %}
  {%- set result = adapter.hudi_health(relation, options) -%}
  {%- do log('Hudi health of ' ~ relation ~ ':\n' ~ result['text'], info=True) -%}
  {{ return(result) }}
{% endmacro %}


{% macro hudi_clean(relation, options={}) %}
  {%- set result = adapter.hudi_clean(relation, options) -%}
  {%- do log('Hudi cleaning of ' ~ relation ~ ': ' ~ result['message'], info=True) -%}
  {{ return(result) }}
{% endmacro %}


{#- The catalog table of a Hudi model is recreated after every commit (it lists the latest base
    files), so docs are written to it each run: table comment and column comments. -#}
{% macro hudi__persist_docs(relation, model, for_relation, for_columns) -%}
  {%- if model.config.materialized is string and model.config.materialized.startswith('hudi_') -%}
    {%- if for_relation and config.persist_relation_docs() and model.description -%}
      {% call statement('dbt_hudi_table_comment') -%}
        alter table {{ relation }} set tblproperties ('comment' = '{{ model.description | replace("\\", "\\\\") | replace("'", "\\'") }}')
      {%- endcall %}
    {%- endif -%}
    {%- if for_columns and config.persist_column_docs() and model.columns -%}
      {%- set existing_columns = adapter.get_columns_in_relation(relation) | map(attribute="name") | list -%}
      {%- for column_name, column in model.columns.items() if column_name in existing_columns and column.description -%}
        {% call statement('dbt_hudi_column_comment') -%}
          alter table {{ relation }} alter column {{ adapter.quote(column_name) }} comment '{{ column.description | replace("\\", "\\\\") | replace("'", "\\'") }}'
        {%- endcall %}
      {%- endfor -%}
    {%- endif -%}
  {%- else -%}
    {{ spark__persist_docs(relation, model, for_relation, for_columns) }}
  {%- endif -%}
{%- endmacro %}
