{#- Fed only by what changed in customers since this model's last commit (hudi_changes): the
    first run reads the whole snapshot (change_op 'i'), later runs only the changed customers,
    with their last change; an upstream delete would delete the row here. -#}
{{ config(
    materialized='hudi_upsert',
    unique_key='customer_id'
) }}

select customer_id, name, country, change_op, change_instant,
       change_op = 'd' as _hoodie_is_deleted
from {{ hudi_changes(ref('customers')) }}
