-- dbt's import-CTE style: the source imported once, then renamed. One relation read through a chain
-- of CTEs, no join and no subquery: hiveopt passes it through from its tokens alone.
with source as (

    select * from {{ source('tpch', 'orders') }}

),

renamed as (

    select
        o_orderkey as order_key,
        o_custkey as customer_key,
        o_orderstatus as order_status,
        o_totalprice as total_price,
        o_orderdate as order_date,
        o_orderpriority as order_priority
    from source

)

select * from renamed
