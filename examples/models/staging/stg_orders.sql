{{ config(materialized='ephemeral') }}

select
    order_id,
    customer_id,
    order_date,
    lower(status) as status,
    amount,
    updated_at,
    _hoodie_is_deleted
from {{ ref('raw_orders') }}
