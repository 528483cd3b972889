{#- Merge-on-read fact table: updates land as log blocks; rows flagged _hoodie_is_deleted
    are deleted; inline compaction every 3 deltacommits. -#}
{{ config(
    materialized='hudi_mor',
    unique_key='order_id',
    partition_by='order_date',
    precombine_key='updated_at',
    compaction_delta_commits=3
) }}

select order_id, customer_id, order_date, status, amount, updated_at, _hoodie_is_deleted
from {{ ref('stg_orders') }}
{% if is_incremental() %}
where updated_at > (select coalesce(max(updated_at), timestamp'1970-01-01') from {{ hudi_snapshot(this) }})
{% endif %}
