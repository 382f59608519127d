"""Speed machinery, apart from the core: runs forked from a warm process, pool slots claimed
only while free, the run queue's limit from the engine's cores. Each piece is switched on in
``dagster.yaml`` (the run launcher, the run coordinator, the event log storage); the core runs
and is tested without any of it. The Dagster internals it needs are listed in
:mod:`lakehouse_assets.lib.orchestrate.dagster_internals`."""
