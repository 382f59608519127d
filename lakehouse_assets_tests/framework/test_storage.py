"""The storage API writes and reads bytes as given, whatever the name's extension."""

from __future__ import annotations

import gzip
from pathlib import Path

from lakehouse_assets.lib.engine.state import storage


def test_a_gzip_file_is_stored_and_read_as_given(tmp_path: Path) -> None:
    data = gzip.compress(b'{"event_id": "a"}\n')
    target = tmp_path / "landing" / "events" / "batch.jsonl.gz"
    storage.write_bytes(str(target), data)
    assert target.read_bytes() == data  # not compressed a second time
    assert storage.read_bytes(str(target)) == data  # not decompressed
    assert storage.read_bytes(str(tmp_path / "missing.gz")) is None
