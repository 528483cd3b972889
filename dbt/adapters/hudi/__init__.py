"""dbt adapter plugin ``hudi``: dbt-spark plus materializations that write Apache Hudi tables.

A profile says ``type: hudi`` with any dbt-spark connection method; Hudi models need
``method: session`` (embedded Spark, a cluster through ``spark.master``, or Spark Connect).
"""

from dbt.adapters.base.plugin import AdapterPlugin

from dbt.adapters.hudi.connections import HudiConnectionManager, HudiCredentials
from dbt.adapters.hudi.impl import HudiAdapter
from dbt.adapters.hudi.relation import HudiRelation
from dbt.include import hudi

__all__ = ["HudiAdapter", "HudiConnectionManager", "HudiCredentials", "HudiRelation", "Plugin"]

Plugin = AdapterPlugin(
    adapter=HudiAdapter,  # type: ignore[arg-type]
    credentials=HudiCredentials,
    include_path=hudi.PACKAGE_PATH,
    dependencies=["spark"],
)
