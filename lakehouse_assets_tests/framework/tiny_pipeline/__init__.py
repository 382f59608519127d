"""A two-table pipeline of the framework tests' own (not the demo's): meter readings landed as
JSON lines into ``readings``, and exact per-meter totals in ``meter_totals``."""
