{#- Merge-on-read table: upserts append log blocks (deltacommits); compaction runs inline every
    compaction_delta_commits deltacommits (default 5). -#}
{% materialization hudi_mor, adapter='hudi', supported_languages=['sql'] %}
  {{ return(dbt_hudi_materialize('hudi_mor')) }}
{% endmaterialization %}
