{#
  The body every Hudi materialization shares. Logic lives in the adapter (Python); this macro
  only orders the steps:
    1. stop unless the SparkSession is in this process, validate the config (all errors), then
       the guards (dbt_hudi_guard): nothing is written by a run they refuse
    2. pre-hooks
    3. stage the model's SELECT as a temporary view
    4. adapter.hudi_write: checks columns, writes through the engine, commits, publishes
       the snapshot for downstream ref()
    5. drop the staging view, record the result, post-hooks, grants, docs
#}

{#- `plan` (file_format='hudi' nodes, see dbt_hudi_materialize_file_format) replaces the model's
    config, operation and SELECT; without it the node is a hudi_* model. -#}
{% macro dbt_hudi_materialize(materialization, plan=none) %}
  {%- do adapter.hudi_require_session() -%}
  {%- set hudi_config = plan['config'] if plan else model.config -%}
  {%- do dbt_hudi_validate_config(materialization, hudi_config) -%}
  {%- do dbt_hudi_guard(model.config.materialized) -%}

  {%- set target_relation = adapter.hudi_catalog_relation(this) -%}
  {%- set existing_relation = load_cached_relation(target_relation) -%}
  {%- set full_refresh = should_full_refresh() or (plan and plan['full_refresh']) -%}
  {%- set grant_config = config.get('grants') -%}

  {{ dbt_hudi_run_hooks(pre_hooks) }}

  {%- set sql = get_select_subquery(compiled_code) if config.get('contract').enforced else compiled_code -%}
  {%- set source_sql = plan['sql'] if plan and plan.get('sql') else sql -%}
  {%- set source_view = dbt_hudi_stage_source(target_relation, source_sql) -%}
  {%- set result = adapter.hudi_write(target_relation, source_view.identifier, materialization,
                                      hudi_config, full_refresh,
                                      plan['operation'] if plan else none,
                                      {'invocation_id': invocation_id, 'unique_id': model.unique_id}) -%}
  {%- do dbt_hudi_drop_source(source_view) -%}
  {%- do log(dbt_hudi_format_progress(target_relation, result), info=True) -%}
  {%- do store_raw_result(name='main', message='HUDI ' ~ result['code'] ~ ' ' ~ result['rows_affected'],
                          code=result['code'], rows_affected=result['rows_affected']) -%}

  {{ dbt_hudi_run_hooks(post_hooks) }}

  {%- set should_revoke = should_revoke(existing_relation, full_refresh_mode=True) -%}
  {%- do apply_grants(target_relation, grant_config, should_revoke) -%}
  {%- do persist_docs(target_relation, model) -%}

  {{ return({'relations': [target_relation]}) }}
{% endmacro %}


{#- What a run must pass before anything runs, pre-hooks included (any materialization that
    writes a Hudi table calls it first): grants the platform cannot apply, a location holding
    something other than a Hudi table (adapter.hudi_guard), an enforced contract that the
    model's SELECT does not meet (dbt's own check and message). -#}
{% macro dbt_hudi_guard(materialization, base_path=none) %}
  {%- do adapter.hudi_guard(this, materialization, model.config, base_path) -%}
  {%- if config.get('contract').enforced -%}
    {%- do get_assert_columns_equivalent(compiled_code) -%}
    {%- do dbt_hudi_warn_constraints() -%}
  {%- endif -%}
{% endmacro %}


{#- A Hudi table keeps no constraints (as on dbt-spark, where they are not enforced either): say
    so for each one the contract declares, rather than accept it silently. -#}
{% macro dbt_hudi_warn_constraints() %}
  {%- set declared = [] -%}
  {%- for name, column in model['columns'].items() -%}
    {%- for constraint in column.get('constraints', []) -%}
      {%- do declared.append(constraint['type'] ~ ' on ' ~ name) -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for constraint in model.get('constraints', []) -%}
    {%- do declared.append(constraint['type'] ~ ' (' ~ (constraint.get('columns') or []) | join(', ') ~ ')') -%}
  {%- endfor -%}
  {%- if declared -%}
    {%- do exceptions.warn("Model '" ~ model['name'] ~ "': constraints are not enforced on Hudi tables, "
        ~ "the data is not checked against them: " ~ declared | join('; ')) -%}
  {%- endif -%}
{% endmacro %}


{% macro dbt_hudi_stage_source(target_relation, sql) %}
  {#- unique per model: concurrent threads share the session's temporary views -#}
  {%- set source_view = make_temp_relation(target_relation, '__dbt_hudi_src') -%}
  {% call statement('dbt_hudi_stage_source') -%}
    create or replace temporary view {{ source_view }} as
    {{ sql }}
  {%- endcall %}
  {{ return(source_view) }}
{% endmacro %}


{% macro dbt_hudi_drop_source(source_view) %}
  {% call statement('dbt_hudi_drop_source') -%}
    drop view if exists {{ source_view }}
  {%- endcall %}
{% endmacro %}


{#- Spark has no transactions: dbt's run_hooks(inside_transaction=False) would send `commit`,
    which Spark rejects, so every hook runs here in its configured order. -#}
{% macro dbt_hudi_run_hooks(hooks) %}
  {% for hook in hooks %}
    {% set rendered = render(hook.get('sql')) | trim %}
    {% if (rendered | length) > 0 %}
      {% call statement(auto_begin=False) %}
        {{ rendered }}
      {% endcall %}
    {% endif %}
  {% endfor %}
{% endmacro %}


{% macro dbt_hudi_format_progress(relation, result) %}
  {{ return('Hudi ' ~ relation ~ ' (' ~ result['table_type'] ~ '): ' ~ result['message']) }}
{% endmacro %}


{#- Hudi models are incremental by nature: is_incremental() is true once the table exists. -#}
{% macro is_incremental() %}
  {% if not execute %}
    {{ return(False) }}
  {% else %}
    {#- a Hudi model's catalog entry is a view holding its base path (adapter.hudi_model_exists) -#}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {{ return(relation is not none
              and (relation.type == 'table' or adapter.hudi_model_exists(relation))
              and model.config.materialized in ['incremental', 'hudi_upsert', 'hudi_mor', 'hudi_insert_overwrite']
              and not should_full_refresh()) }}
  {% endif %}
{% endmacro %}


{#- The latest committed snapshot of a Hudi model's table, for a relation dbt did not render
    as one (`ref()` and `{{ this }}` in a running model already are; see relation.py). -#}
{% macro hudi_snapshot(relation) %}
  {{ return(adapter.hudi_snapshot_relation(relation)) }}
{% endmacro %}
