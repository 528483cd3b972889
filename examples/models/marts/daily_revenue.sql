{#- Each run recomputes the days present in the orders snapshot and replaces those partitions. -#}
{{ config(
    materialized='hudi_insert_overwrite',
    unique_key='order_date',
    partition_by='order_date'
) }}

select order_date, count(*) as orders, sum(amount) as revenue
from {{ ref('orders') }}
group by order_date
