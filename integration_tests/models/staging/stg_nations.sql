select nation_key, nation_name, region_key
from {{ ref('nations') }}
