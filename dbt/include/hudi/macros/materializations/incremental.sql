{#- file_format='hudi': the first run creates the Hudi table (bulk_insert); later runs write by
    incremental_strategy: merge -> upsert, insert_overwrite -> insert_overwrite of the partitions
    the rows touch (the whole table when unpartitioned), append -> insert. Any other file_format
    is dbt-spark's incremental. -#}
{% materialization incremental, adapter='hudi', supported_languages=['sql', 'python'] %}
  {%- if dbt_hudi_is_file_format() -%}
    {{ return(dbt_hudi_materialize_file_format('incremental')) }}
  {%- endif -%}
  {{ return(materialization_incremental_spark()) }}
{% endmaterialization %}
