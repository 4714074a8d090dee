select region_key, region_name
from {{ ref('regions') }}
