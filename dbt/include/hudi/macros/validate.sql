{#- Every config error of a Hudi model, at once, as a compiler error naming the model. -#}
{% macro dbt_hudi_validate_config(materialization, hudi_config=none) %}
  {{ return(adapter.hudi_validate_config(this, materialization,
                                         model.config if hudi_config is none else hudi_config)) }}
{% endmacro %}


{#- A `view` model over Hudi models (views.py): a catalog view whose text reads the Hudi models'
    catalog entries (refused outside dbt, naming how to read the table), and a session view of the
    compiled SQL that ref() renders to, kept on the catalog view as a property. Any other view is
    dbt-spark's. -#}
{% macro hudi__create_view_as(relation, sql) -%}
  {%- set defined = adapter.hudi_define_view(relation, sql) -%}
  {%- if defined is none -%}
    {{ spark__create_view_as(relation, sql) }}
  {%- else -%}
  create or replace view {{ relation }}
  {% if config.persist_column_docs() -%}
    {% set model_columns = model.columns %}
    {% set query_columns = get_columns_in_query(sql) %}
    (
    {{ get_persist_docs_column_list(model_columns, query_columns) }}
    )
  {% endif %}
  {{ comment_clause() }}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config.enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif %}
  {{ defined['properties'] }}
  as
    {{ defined['text'] }}
  {%- endif -%}
{%- endmacro %}
