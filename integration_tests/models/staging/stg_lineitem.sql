select l_orderkey as order_key, l_partkey as part_key, l_suppkey as supplier_key,
       l_linenumber as line_number, l_quantity as quantity, l_extendedprice as extended_price,
       l_discount as discount, l_shipdate as ship_date, l_returnflag as return_flag
from {{ source('tpch', 'lineitem') }}
