"""Writing a table: the query, each micro-batch, and the write strategy of each kind of sink."""
