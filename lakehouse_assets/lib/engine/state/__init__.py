"""A table's state on the data root: checkpoints and their guards, ledgers, the Delta log, the catalog."""
