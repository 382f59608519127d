"""The code location of the event log's pipeline, for tests that materialize it in a child process."""

from lakehouse_assets.lib import build_definitions, collect_tables

defs = build_definitions(collect_tables("lakehouse_assets_tests.framework.event_log_pipeline"))
