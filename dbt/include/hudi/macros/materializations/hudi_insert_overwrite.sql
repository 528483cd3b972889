{#- Copy-on-write table: each run replaces (replacecommit) the partitions its rows touch, or the
    whole table when there is no partition_by or overwrite_scope is 'table'. -#}
{% materialization hudi_insert_overwrite, adapter='hudi', supported_languages=['sql'] %}
  {{ return(dbt_hudi_materialize('hudi_insert_overwrite')) }}
{% endmaterialization %}
