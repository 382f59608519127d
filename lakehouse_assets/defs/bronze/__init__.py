"""Bronze: raw landed records, append-only, each landed line exactly once."""
