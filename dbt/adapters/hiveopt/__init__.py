from dbt.adapters.base import AdapterPlugin

from dbt.adapters.hiveopt.connections import HiveoptConnectionManager, HiveoptCredentials  # noqa: F401
from dbt.adapters.hiveopt.impl import HiveoptAdapter
from dbt.include import hiveopt

Plugin = AdapterPlugin(
    adapter=HiveoptAdapter,  # type: ignore[arg-type]
    credentials=HiveoptCredentials,
    include_path=hiveopt.PACKAGE_PATH,
    dependencies=["spark"],
)
