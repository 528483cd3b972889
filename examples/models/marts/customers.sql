{#- Copy-on-write dimension: one row per customer, latest version wins by updated_at. -#}
{{ config(
    materialized='hudi_upsert',
    unique_key='customer_id',
    precombine_key='updated_at',
    payload='event_time'
) }}

select customer_id, name, country, updated_at
from {{ ref('raw_customers') }}
