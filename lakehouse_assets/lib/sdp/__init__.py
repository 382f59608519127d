"""Spark Declarative Pipelines projects (``spark-pipeline.yml`` and ``pyspark.pipelines`` files)
run as this framework's tables: :func:`~.location.load_spark_pipeline`."""
