"""The loader as a Dagster component, for ``dg`` projects:

.. code-block:: yaml

    # defs/orders/defs.yaml
    type: lakehouse_assets.lib.sdp.component.SparkPipelineComponent
    attributes:
      spec: spark-pipeline.yml
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from lakehouse_assets.lib.sdp.location import load_spark_pipeline


class SparkPipelineComponent(dg.Component, dg.Model, dg.Resolvable):
    """A Spark Declarative Pipelines project as assets, one per dataset (:func:`load_spark_pipeline`).

    :param spec: the pipeline's ``spark-pipeline.yml``, relative to the component's folder.
    :param sensors: a sensor per landing source and Kafka subscription.
    :param schedules: nightly maintenance and the refresh schedule.
    """

    spec: str = "spark-pipeline.yml"
    sensors: bool = True
    schedules: bool = True

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = Path(self.spec)
        return load_spark_pipeline(
            spec if spec.is_absolute() else context.path / spec, sensors=self.sensors, schedules=self.schedules
        )
