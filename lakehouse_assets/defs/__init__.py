"""The demo pipeline, declared with the framework: bronze, silver and gold tables.

Every table declared in a module under this package is collected by
:func:`lakehouse_assets.lib.collect_tables` (see ``lakehouse_assets/definitions.py``).
"""
