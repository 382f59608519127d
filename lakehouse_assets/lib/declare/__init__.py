"""The declaration API: tables, inputs, write modes, expectations, checks, CDC, parsing (pure, no I/O)."""
