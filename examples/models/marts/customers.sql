{#- Copy-on-write dimension: one row per customer, latest version wins by updated_at. It keeps
    a change log (CDC), which customer_changes consumes. -#}
{{ config(
    materialized='hudi_upsert',
    unique_key='customer_id',
    precombine_key='updated_at',
    payload='event_time',
    hudi_options={'hoodie.table.cdc.enabled': 'true'}
) }}

select customer_id, name, country, updated_at
from {{ ref('raw_customers') }}
