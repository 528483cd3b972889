-- daily_revenue must add up to the orders snapshot (no stale or duplicate versions)
select r.order_date
from {{ ref('daily_revenue') }} r
full outer join (
    select order_date, sum(amount) as revenue from {{ ref('orders') }} group by order_date
) o on o.order_date = r.order_date
where o.order_date is null or r.order_date is null or abs(o.revenue - r.revenue) > 0.001
