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


{#- A Hudi model's catalog entry is a view published after every commit (publish.py): its docs
    are written where it is created, the table comment and the column comments at once. -#}
{% macro hudi__persist_docs(relation, model, for_relation, for_columns) -%}
  {%- if (model.config.materialized is string and model.config.materialized.startswith('hudi_'))
        or dbt_hudi_is_file_format(model.config) -%}
    {%- set description = model.description if for_relation and config.persist_relation_docs() else none -%}
    {%- set columns = {} -%}
    {%- if for_columns and config.persist_column_docs() -%}
      {%- for column_name, column in model.columns.items() if column.description -%}
        {%- do columns.update({column_name: column.description}) -%}
      {%- endfor -%}
    {%- endif -%}
    {%- if description or columns -%}
      {%- do adapter.hudi_persist_docs(relation, description, columns) -%}
    {%- endif -%}
  {%- else -%}
    {{ spark__persist_docs(relation, model, for_relation, for_columns) }}
  {%- endif -%}
{%- endmacro %}
