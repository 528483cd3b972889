{#- The upstream Hudi model's changes since this model's last successful commit, as a relation
    to select from: {{ hudi_changes(ref('orders')) }}. Columns: the upstream's data columns,
    change_op ('i', 'u', 'd') and change_instant; one row per record, its latest change. The
    first run and --full-refresh read the upstream's whole snapshot (change_op 'i'). The
    checkpoint is committed with this model's write (adapter.hudi_changes). -#}
{% macro hudi_changes(upstream) %}
  {%- if not execute -%}
    {{ return(upstream) }}
  {%- endif -%}
  {{ return(adapter.hudi_changes(upstream, this, model.config, should_full_refresh())) }}
{% endmacro %}
