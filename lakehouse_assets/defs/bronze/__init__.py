"""Bronze: raw landed records, append-only, each landed line exactly once."""

# A bronze table's quarantine: each line that is not a record, as landed, with its file.
BAD_LINE_COLUMNS = ["raw_line", "_source_file", "_ingested_at"]
BAD_LINE_DOCS = {"raw_line": "the line exactly as landed (not a JSON object, or a malformed CSV record)"}
# What every quarantined line must carry: the line itself and the file it came from.
BAD_LINE_TRACED = ["raw_line", "_source_file"]
