{#- Copy-on-write table: the first run creates it (bulk_insert), later runs upsert by unique_key. -#}
{% materialization hudi_upsert, adapter='hudi', supported_languages=['sql'] %}
  {{ return(dbt_hudi_materialize('hudi_upsert')) }}
{% endmaterialization %}
