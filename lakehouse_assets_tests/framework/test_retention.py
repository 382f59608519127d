"""Landing retention, exactly once: a landed file is archived (or deleted) once its rows are
committed, with the run killed at every step of it (after a file is cleaned, after a micro-batch
is written, after a file to set aside is recorded and after it is moved). Every table equals the
lines landed, counted here; the archive holds each committed file once, byte for byte; nothing
is left in the landing folders but the file set aside."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from verification.crash import materialize_in_child
from verification.lakehouse import Lakehouse

pytestmark = [pytest.mark.slow, pytest.mark.gate]
LOCATION = ("-m", "lakehouse_assets_tests.framework.retention_definitions")
SOURCES = ("archived", "deleted")


class Landing:
    """What the test landed, file by file, to compute the answers from."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, dict[str, bytes]] = {s: {} for s in SOURCES}

    def round(self, n: int, broken: bool = False) -> None:
        for source in SOURCES:
            folder = self.root / "landing" / source
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(2):
                lines = [json.dumps({"reading_id": f"{source}-{n}-{i}-{j}", "kwh": j}) for j in range(4)]
                data = ("\n".join([*lines, "not json"]) + "\n").encode()
                name = f"r{n}-{i}.jsonl" + (".gz" if i else "")
                (folder / name).write_bytes(gzip.compress(data) if i else data)
                self.files[source][name] = data
            if broken:
                whole = gzip.compress(b'{"reading_id": "never"}\n' * 5000)
                (folder / f"r{n}-broken.jsonl.gz").write_bytes(whole[: len(whole) // 2])

    def ids(self, source: str) -> Counter:
        return Counter(
            json.loads(line)["reading_id"]
            for data in self.files[source].values()
            for line in data.decode().splitlines()
            if line.startswith("{")
        )


def test_files_are_cleaned_once_committed_whatever_the_kills(tmp_path: Path, spark) -> None:
    lh = Lakehouse(tmp_path / "lakehouse", spark, None)  # type: ignore[arg-type] - only its tables are read
    landing = Landing(lh.root)
    steps = [
        (1, False, None),
        (2, False, "archived:after_landed_file_cleaned"),
        (None, False, "deleted:after_landed_file_cleaned"),
        (3, False, "archived:after_table_write"),
        (4, True, "archived:after_set_aside_recorded"),
        (None, False, "deleted:after_set_aside_moved"),
        (None, False, None),
        (None, False, None),  # cleans what the run before committed
    ]
    for n, broken, fault in steps:
        if n is not None:
            landing.round(n, broken)
        outcome = materialize_in_child(tmp_path, "*", fault=fault, location=LOCATION)
        if fault:
            assert outcome.killed, f"{fault} did not fire:\n{outcome.output[-3000:]}"
        else:
            assert outcome.returncode == 0, outcome.output[-3000:]

    for source in SOURCES:
        ids = Counter(r["reading_id"] for r in lh.table(source).collect())
        assert ids == landing.ids(source), f"{source} lost or duplicated rows"
        quarantined = lh.table(f"{source}_quarantine")
        bad = Counter(Path(r["_source_file"]).name for r in quarantined.where("_set_aside_reason IS NULL").collect())
        assert bad == Counter(dict.fromkeys(landing.files[source], 1)), "one bad line per file, once"
        aside = quarantined.where("_set_aside_reason IS NOT NULL").collect()
        assert [Path(r["_source_file"]).name for r in aside] == ["r4-broken.jsonl.gz"], "set aside once"
        folder = lh.root / "landing" / source
        assert sorted(p.name for p in folder.iterdir()) == ["_set_aside"], "committed files left in landing"
        assert [p.name for p in (folder / "_set_aside").iterdir()] == ["r4-broken.jsonl.gz"]
    archived = {p.name: p.read_bytes() for p in (lh.root / "archive" / "archived").rglob("*") if p.is_file()}
    assert set(archived) == set(landing.files["archived"])
    for name, data in archived.items():
        assert (gzip.decompress(data) if name.endswith(".gz") else data) == landing.files["archived"][name]
    assert not (lh.root / "archive" / "deleted").exists()
    # Spark's file-source log (a compact file every second batch here) forgot every cleaned file.
    compacts = list((lh.root / "checkpoints" / "archived" / "query" / "sources" / "0").glob("*.compact"))
    assert compacts and all(p.read_text().splitlines() == ["v1"] for p in compacts), "cleaned files still logged"
