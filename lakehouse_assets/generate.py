"""Realistic landing data for the demo, the tests and the benchmarks.

    python -m lakehouse_assets.generate --files 4 --rows 500 --late 0.05 --duplicate 0.03

Files are written under a temporary ``_``-prefixed name and renamed when complete, as the
contract asks of producers. Every fraction is of the rows of a file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.progress import Progress

from lakehouse_assets.lib.brokers.kafka_produce import produce_lines
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.errors import KafkaProblem, RootUnusable
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current

CATEGORIES = ["books", "electronics", "garden", "toys", "fashion", None]
PAGES = ["/", "/search", "/product", "/cart", "/checkout"]
USER_AGENTS = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile Safari/537.36",
    "Mozilla/5.0 (iPad; CPU OS 17_0) Tablet",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/130.0",
    None,
]
TIERS = ["bronze", "silver", "gold", "platinum"]
COUNTRIES = ["DE", "FR", "US", "BR", "JP", "IN"]
BAD_CSV_LINES = ["c99999,too,few,fields", 'c99998,"a","b",c,d,upsert,2026-01-01T00:00:00Z,extra']
BAD_LINES = ['{"event_id": "truncated', "not json at all", "[1, 2, 3]", "42", '"just a string"', "{,}"]


@dataclass
class GeneratorOptions:
    files: int = 2
    rows: int = 200
    customers: int = 50
    late: float = 0.05
    duplicate: float = 0.03
    bad_lines: float = 0.02
    invalid: float = 0.03
    unknown_fields: float = 0.05
    blank_lines: float = 0.01
    gzip: float = 0.25
    customer_changes: int = 20
    impressions: int = 100
    click_rate: float = 0.3
    start: datetime | None = None
    seed: int | None = None


def _iso(ts: datetime, rng: random.Random) -> str:
    style = rng.random()
    if style < 0.7:
        return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"
    if style < 0.9:
        offset = timedelta(hours=2)
        return (ts + offset).strftime("%Y-%m-%dT%H:%M:%S") + "+02:00"
    return ts.strftime("%Y-%m-%dT%H:%M:%S")  # no offset: UTC


class LandingWriter:
    """Writes complete files atomically: a temporary name, then a rename on a local root; one PUT,
    which an object store shows whole or not at all, on a bucket."""

    def __init__(self, paths: LakehousePaths, tag: str):
        self.paths = paths
        self.tag = tag

    def write(self, source: str, name: str, lines: list[str], compress: bool) -> Path | str:
        final_name = f"{source}-{self.tag}-{name}" + (".gz" if compress else "")
        data = ("\n".join(lines) + "\n").encode("utf-8")
        if compress:
            data = gzip.compress(data)
        if not self.paths.is_local:
            uri = f"{self.paths.landing(source)}/{final_name}"
            storage.write_bytes(uri, data)
            return uri
        folder = self.paths.local_path(self.paths.landing(source))
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / final_name
        temp = folder / f"_{final.name}.tmp"
        temp.write_bytes(data)
        os.replace(temp, final)
        return final


class Generator:
    def __init__(self, options: GeneratorOptions):
        self.o = options
        self.rng = random.Random(options.seed)
        self.start = options.start or datetime.now(UTC).replace(microsecond=0)
        self.sent: list[dict] = []

    def customer_id(self) -> str:
        return f"c{self.rng.randrange(self.o.customers):05d}"

    def event(self, at: datetime) -> dict:
        rng = self.rng
        kind = rng.choices(["page_view", "add_to_cart", "purchase"], weights=[70, 18, 12])[0]
        record = {
            "event_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "event_time": _iso(at, rng),
            "user_id": self.customer_id(),
            "event_type": kind,
            "product_id": f"p{rng.randrange(500):04d}" if kind != "page_view" or rng.random() < 0.5 else None,
            "category": rng.choice(CATEGORIES),
            "page": rng.choice(PAGES),
            "user_agent": rng.choice(USER_AGENTS),
            "amount": round(rng.uniform(3, 300), 2) if kind == "purchase" else None,
        }
        if rng.random() < self.o.unknown_fields:
            record["campaign"] = {"id": rng.randrange(100), "source": "newsletter"}
        if rng.random() < self.o.invalid:
            broken = rng.choice(["amount", "event_time", "event_type", "event_id", "negative"])
            if broken == "amount":
                record["amount"] = "twelve"
            elif broken == "event_time":
                record["event_time"] = "yesterday at noon"
            elif broken == "event_type":
                record["event_type"] = "refund"
            elif broken == "event_id":
                record["event_id"] = " "
            else:
                record["event_type"], record["amount"] = "purchase", -5.0
        return record

    def event_lines(self, rows: int) -> list[str]:
        lines = []
        for _ in range(rows):
            roll = self.rng.random()
            if self.sent and roll < self.o.duplicate:
                lines.append(json.dumps(self.rng.choice(self.sent)))
                continue
            if roll < self.o.duplicate + self.o.bad_lines:
                lines.append(self.rng.choice(BAD_LINES))
                continue
            if roll < self.o.duplicate + self.o.bad_lines + self.o.blank_lines:
                lines.append("   ")
                continue
            at = self.start + timedelta(seconds=self.rng.randrange(3600))
            if self.rng.random() < self.o.late:
                at -= timedelta(hours=self.rng.randrange(2, 72))
            record = self.event(at)
            self.sent.append(record)
            lines.append(json.dumps(record))
        return lines

    def customer_lines(self) -> list[str]:
        """A CSV change feed: out-of-order ``updated_at``, deletes, re-delivered changes, names
        with commas and quotes, invalid changes and malformed records (per the fractions)."""
        lines = ["customer_id,name,email,tier,country,op,updated_at"]
        for _ in range(self.o.customer_changes):
            roll = self.rng.random()
            if len(lines) > 1 and roll < self.o.duplicate:
                lines.append(self.rng.choice(lines[1:]))  # re-delivered change
                continue
            if roll < self.o.duplicate + self.o.bad_lines:
                lines.append(self.rng.choice(BAD_CSV_LINES))
                continue
            cid = self.customer_id()
            at = self.start - timedelta(minutes=self.rng.randrange(60 * 24))
            op = "delete" if self.rng.random() < 0.05 else "upsert"
            first = self.rng.choice(["Ada", "Grace", "Linus", "Barbara", 'Edsger ""EWD""'])
            name = f'"{first} {cid[-3:]}, Jr."'
            updated = at.strftime("%Y-%m-%dT%H:%M:%SZ")
            if self.rng.random() < self.o.invalid:
                broken = self.rng.choice(["customer_id", "op", "updated_at"])
                cid = "" if broken == "customer_id" else cid
                op = "merge" if broken == "op" else op
                updated = "last tuesday" if broken == "updated_at" else updated
            lines.append(
                f"{cid},{name},{cid}@example.com,{self.rng.choice(TIERS)},{self.rng.choice(COUNTRIES)},{op},{updated}"
            )
        return lines

    def bad_or(self, line: str) -> str:
        return self.rng.choice(BAD_LINES) if self.rng.random() < self.o.bad_lines else line

    def ad_lines(self) -> tuple[list[str], list[str]]:
        impressions, clicks = [], []
        for _ in range(self.o.impressions):
            iid = str(uuid.UUID(int=self.rng.getrandbits(128)))
            at = self.start + timedelta(seconds=self.rng.randrange(3600))
            impression = json.dumps({
                "impression_id": iid, "ad_id": f"ad{self.rng.randrange(20):03d}",
                "user_id": self.customer_id(), "impression_time": _iso(at, self.rng),
            })  # fmt: skip
            impressions.append(self.bad_or(impression))
            if self.rng.random() < self.o.duplicate:
                impressions.append(impression)  # re-delivered
            if self.rng.random() < self.o.click_rate:
                delay = timedelta(seconds=self.rng.randrange(15 * 60))
                click = {"click_id": f"k-{iid}", "impression_id": iid, "click_time": _iso(at + delay, self.rng)}
                clicks.append(self.bad_or(json.dumps(click)))  # delays over 10 minutes do not count
                if self.rng.random() < self.o.duplicate:
                    clicks.append(json.dumps(click))
        return impressions, clicks


def generate(
    paths: LakehousePaths, options: GeneratorOptions, sources: list[str] | None = None, to_kafka: str | None = None
) -> list[Path | str]:
    """Land one batch of files for ``sources`` (default: all four) and return their paths; with
    ``to_kafka`` (brokers), the events go to Kafka topic ``events`` instead, one message per line."""
    sources = sources or ["events", "customers", "ad_impressions", "ad_clicks"]
    generator = Generator(options)
    writer = LandingWriter(paths, f"{generator.start:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}")
    written = []
    with Progress(transient=True, disable=options.files * options.rows < 200_000) as progress:
        task = progress.add_task("landing events", total=options.files)
        if "events" in sources and to_kafka:
            lines = [ln for _ in range(options.files) for ln in generator.event_lines(options.rows)]
            produce_lines(to_kafka, "events", lines)
        elif "events" in sources:
            for i in range(options.files):
                compress = generator.rng.random() < options.gzip
                lines = generator.event_lines(options.rows)
                written.append(writer.write("events", f"{i:04d}.jsonl", lines, compress))
                progress.advance(task)
    if "customers" in sources:
        written.append(writer.write("customers", "0000.csv", generator.customer_lines(), False))
    impressions, clicks = generator.ad_lines()
    if "ad_impressions" in sources:
        written.append(writer.write("ad_impressions", "0000.jsonl", impressions, False))
    if "ad_clicks" in sources:
        written.append(writer.write("ad_clicks", "0000.jsonl", clicks, False))
    return written


OPTION_HELP = [
    ("files", int, "events files to land"),
    ("rows", int, "events per file"),
    ("customers", int, "distinct customer ids that events and customer changes use"),
    ("customer_changes", int, "lines of the customers change file (CSV, upserts and deletes)"),
    ("impressions", int, "ad impressions in the batch (one file)"),
    ("seed", int, "random seed, for the same files again (default: a new one each time)"),
    ("late", float, "share of events timed 2-72 hours before the file's hour"),
    ("duplicate", float, "share of lines that re-deliver an earlier record"),
    ("bad_lines", float, "share of lines that are not JSON objects (to the quarantine)"),
    ("invalid", float, "share of records failing an expectation (to silver's quarantines)"),
    ("unknown_fields", float, "share of events with a field the schema does not declare (_rescued_data)"),
    ("blank_lines", float, "share of blank lines (skipped)"),
    ("gzip", float, "share of files written gzip-compressed"),
    ("click_rate", float, "share of impressions followed by a click"),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = GeneratorOptions()
    for name, kind, meaning in OPTION_HELP:
        default = getattr(defaults, name)
        shown = "" if default is None else f" (default {default})"
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default, help=meaning + shown)
    parser.add_argument("--start", type=datetime.fromisoformat, help="base event time (ISO-8601, UTC)")
    parser.add_argument("--sources", nargs="*", help="landing sources (default: all)")
    parser.add_argument("--root", help="data root (default: $LAKEHOUSE_ROOT or data/)")
    parser.add_argument(
        "--to-kafka", nargs="?", const="", metavar="BROKERS",
        help="produce the events to Kafka topic events instead of landing files (default brokers: $LAKEHOUSE_KAFKA_BOOTSTRAP)",
    )  # fmt: skip
    args = vars(parser.parse_args(argv))
    root = args.pop("root")
    paths = LakehousePaths(root) if root else LakehousePaths.from_env()
    if args["start"] and args["start"].tzinfo is None:
        args["start"] = args["start"].replace(tzinfo=UTC)
    sources = args.pop("sources")
    to_kafka = args.pop("to_kafka")
    if to_kafka == "":
        to_kafka = current().kafka_bootstrap or sys.exit(
            "generate: --to-kafka needs brokers (or LAKEHOUSE_KAFKA_BOOTSTRAP)"
        )
    try:
        paths.check_root()
        written = generate(paths, GeneratorOptions(**args), sources, to_kafka)
    except (RootUnusable, KafkaProblem) as error:
        sys.exit(f"generate: {error}")
    events = f"; {args['files'] * args['rows']} events produced to Kafka topic events at {to_kafka}" if to_kafka else ""
    print(f"landed {len(written)} files under {paths.root}/landing{events}")


if __name__ == "__main__":
    main()
