{#- Run-operations on a Hudi model's table; `relation` is 'schema.model' or 'model' (target schema).
      dbt run-operation hudi_compact --args '{relation: analytics.orders_mor}'
      dbt run-operation hudi_cluster --args '{relation: orders, sort_columns: [customer_id, day], strategy: z-order}'
      dbt run-operation hudi_clean --args '{relation: orders, options: {hoodie.cleaner.commits.retained: 1}}'
      dbt run-operation hudi_health --args '{relation: orders}'
      dbt run-operation hudi_restore --args '{invocation_id: 5f0c..., dry_run: true}'
-#}
{% macro hudi_compact(relation, options={}) %}
  {%- set result = adapter.hudi_compact(relation, options) -%}
  {%- do log('Hudi compaction of ' ~ relation ~ ': ' ~ result['message'], info=True) -%}
  {{ return(result) }}
{% endmacro %}


{#- Cluster the model's table: rewrite its small file groups into files of the target size,
    ordered by `sort_columns` (linear, z-order or hilbert `strategy`); a plan a writer scheduled
    runs first. `options` are further hoodie.clustering.* / hoodie.layout.optimize.* settings. -#}
{% macro hudi_cluster(relation, sort_columns=none, strategy=none, options={}) %}
  {%- set result = adapter.hudi_cluster(relation, sort_columns, strategy, options) -%}
  {%- do log('Hudi clustering of ' ~ relation ~ ': ' ~ result['message'], info=True) -%}
  {{ return(result) }}
{% endmacro %}


{#- The health view of the model's table: findings (each with the command that fixes it) and
    facts; `options` are the hoodie.* settings the table's writers use (retention, trigger). -#}
{% macro hudi_health(relation, options={}) %}
  {%- set result = adapter.hudi_health(relation, options) -%}
  {%- do log('Hudi health of ' ~ relation ~ ':\n' ~ result['text'], info=True) -%}
  {{ return(result) }}
{% endmacro %}


{#- Undo a bad run: restore every Hudi table of the project that dbt invocation `invocation_id`
    wrote to its state just before it. The plan is logged first; `dry_run` stops there; a table a
    later writer also changed is refused (nothing is restored) unless `force`. -#}
{% macro hudi_restore(invocation_id, dry_run=false, force=false) %}
  {%- set relations = [] -%}
  {%- for node in graph.nodes.values() if node.resource_type in ('model', 'seed', 'snapshot') -%}
    {%- set materialized = node.config.materialized or '' -%}
    {%- if materialized.startswith('hudi_') or node.config.get('file_format') == 'hudi' -%}
      {%- do relations.append(node.schema ~ '.' ~ (node.alias or node.name)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set result = adapter.hudi_restore(invocation_id, relations, dry_run, force) -%}
  {%- if dry_run -%}
    {%- do log('Dry run: nothing was restored', info=True) -%}
  {%- endif -%}
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
