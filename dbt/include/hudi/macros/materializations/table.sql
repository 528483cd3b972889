{#- file_format='hudi': every run writes a fresh Hudi table (bulk_insert), as dbt-spark's
    CREATE TABLE ... USING hudi AS SELECT does; any other file_format is dbt-spark's table. -#}
{% materialization table, adapter='hudi', supported_languages=['sql', 'python'] %}
  {%- if dbt_hudi_is_file_format() -%}
    {{ return(dbt_hudi_materialize_file_format('table')) }}
  {%- endif -%}
  {{ return(materialization_table_spark()) }}
{% endmaterialization %}
