"""Answers computed from the landed files in plain Python, independently of Spark and the
pipeline's code, to compare the tables against."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

EVENT_TYPES = {"page_view", "add_to_cart", "purchase"}
STRING_FIELDS = ["event_id", "event_time", "user_id", "event_type", "product_id", "category", "page", "user_agent"]


def landed_files(root: Path, source: str) -> list[Path]:
    folder = root / "landing" / source
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))


def file_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    lines = re.split(r"\r\n|\r|\n", data.decode("utf-8", errors="replace"))  # as Spark splits
    return lines[:-1] if lines and lines[-1] == "" else lines


def is_blank(line: str) -> bool:
    return re.fullmatch(r"\s*", line) is not None


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or ("T" not in value and " " not in value):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).replace(tzinfo=None)


def as_bronze(record: dict) -> dict:
    """Declared string fields take any JSON value as its text (numbers, booleans, objects)."""
    out = dict(record)
    for name in STRING_FIELDS:
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            out[name] = json.dumps(value, separators=(",", ":"))
    return out


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ExpectedEvents:
    """Bronze, quarantine, silver and gold answers for the events landed under ``root``."""

    def __init__(self, root: Path, messages: list[tuple[str | None, str]] = ()):
        """:param messages: Kafka messages of topic ``events`` as (value, ``kafka://`` URI);
        a None value (tombstone) or a blank one is skipped like a blank line."""
        self.bronze: list[dict] = []
        self.bad_lines: list[tuple[str, str]] = []
        self.lines_per_file: dict[str, int] = {}
        for path in landed_files(root, "events"):
            non_blank = [ln for ln in file_lines(path) if not is_blank(ln)]
            self.lines_per_file[path.name] = len(non_blank)
            for line in non_blank:
                self._add(line, path.name)
        for value, uri in messages:
            if value is not None and not is_blank(value):
                self._add(value, uri)

    def _add(self, line: str, source: str) -> None:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict):
            self.bronze.append(as_bronze(record) | {"_file": source})
        else:
            self.bad_lines.append((line, source))

    @staticmethod
    def failures(record: dict) -> list[str]:
        failed = []
        event_id = record.get("event_id")
        if not isinstance(event_id, str) or is_blank(event_id):
            failed.append("event_id_present")
        if parse_time(record.get("event_time")) is None:
            failed.append("event_time_valid")
        if record.get("event_type") not in EVENT_TYPES:
            failed.append("event_type_known")
        amount = record.get("amount")
        if record.get("event_type") == "purchase" and not (is_number(amount) and amount >= 0):
            failed.append("purchase_amount_valid")
        return failed

    @property
    def quarantined(self) -> list[dict]:
        return [r for r in self.bronze if self.failures(r)]

    @property
    def silver(self) -> dict[str, dict]:
        """One row per valid event_id (re-deliveries carry the same content)."""
        rows: dict[str, dict] = {}
        for r in self.bronze:
            if not self.failures(r):
                rows.setdefault(r["event_id"], r)
        return rows

    def hourly_revenue(self) -> dict[tuple[datetime, str], tuple[float, int, int]]:
        revenue: dict[tuple[datetime, str], float] = defaultdict(float)
        orders: dict[tuple[datetime, str], int] = defaultdict(int)
        buyers: dict[tuple[datetime, str], set] = defaultdict(set)
        for r in self.silver.values():
            if r["event_type"] != "purchase":
                continue
            ts = parse_time(r["event_time"])
            key = (ts.replace(minute=0, second=0, microsecond=0), r.get("category") or "unknown")
            revenue[key] += float(r["amount"])
            orders[key] += 1
            buyers[key].add(r.get("user_id"))
        return {k: (revenue[k], orders[k], len(buyers[k])) for k in revenue}


def scd2_row(row) -> tuple:
    """A ``silver_customers`` row in the form ``expected_history`` gives its versions."""
    return (row["customer_id"], (row["name"], row["email"], row["tier"], row["country"]),
            row["valid_from"], row["valid_to"], row["is_current"])  # fmt: skip


def expected_history(root) -> tuple[dict[str, list[tuple]], int, int]:
    """SCD2 rows per customer computed in plain Python from every landed file, plus the
    numbers of valid and invalid records and of malformed CSV records."""
    valid: set[tuple] = set()
    invalid = malformed = 0
    for path in landed_files(root, "customers"):
        data = path.read_bytes()
        text = (gzip.decompress(data) if path.name.endswith(".gz") else data).decode()
        rows = list(csv.reader(io.StringIO(text)))[1:]
        for row in rows:
            if not row:
                continue
            if len(row) != 7:
                malformed += 1
                continue
            row = [v if v != "" else None for v in row]
            cid, name, email, tier, country, op, updated = row
            at = parse_time(updated)
            if not cid or not cid.strip() or op not in ("upsert", "delete") or at is None:
                invalid += 1
                continue
            valid.add((cid, at, op, name, email, tier, country))
    history: dict[str, list[tuple]] = {}
    for cid in sorted({c[0] for c in valid}):
        current: tuple | None = None  # (values, valid_from)
        versions: list[list] = []
        for _, at, op, *values in sorted(c for c in valid if c[0] == cid):
            if op == "delete":
                if current is not None:
                    versions[-1][2] = at
                current = None
            elif current is None or tuple(values) != current:
                if current is not None:
                    versions[-1][2] = at
                versions.append([tuple(values), at, None])
                current = tuple(values)
        if versions:  # a customer whose only valid change is a delete never had a version
            history[cid] = [(cid, v, start, end, end is None) for v, start, end in versions]
    return history, len(valid), invalid + malformed


def history_rows(history: dict[str, list[tuple]]) -> Counter:
    """Every SCD2 row of a history, counted, so a duplicated version fails a comparison."""
    return Counter(row for rows in history.values() for row in rows)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


HOUR = timedelta(hours=1)
