"""Speed machinery, apart from the core: runs forked from a warm process, pool slots claimed
only while free, the run queue's limit from the engine's cores (each switched on in
``dagster.yaml``: the run launcher, the run coordinator, the event log storage), the driver's
class archive and the engine's warm Python workers (on unless ``LAKEHOUSE_CLASS_ARCHIVE=0`` /
``LAKEHOUSE_WARM_WORKERS=0``; the Spark set-up imports them only then). The core runs and is
tested without any of it. The Dagster internals it needs are listed in
:mod:`lakehouse_assets.lib.orchestrate.dagster_internals`."""
