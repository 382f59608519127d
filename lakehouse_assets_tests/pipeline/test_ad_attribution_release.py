"""gold_ad_attribution's release rule (issue #22), checked after every run of real
materializations against an answer computed here from the landed records alone.

The watermark after a run: for each input, the latest valid event time landed so far (rows
with an id and a parsable time; late and re-delivered rows included, since Spark's watermark
sees them too), truncated to the millisecond, minus the allowed lateness (1 hour); the
watermark is the minimum of the two (``spark.sql.streaming.multipleWatermarkPolicy=min``) and
never moves back. The rule: an impression is in the table after a run exactly when its
attribution window has passed that watermark, ``impression_time + 10 minutes < watermark``,
with ``clicked`` true when an accepted click of it lies in ``[impression_time,
impression_time + 10 minutes]``.

A row (impression or click) is late, dropped and counted, when its event time is at or behind
the watermark of the previous run (each run here reads its new bronze rows in one
micro-batch, so that is the watermark Spark filters the run's rows with); re-deliveries of an
accepted row are ignored.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from verification.lakehouse import Lakehouse

LATENESS = timedelta(hours=1)
WINDOW = timedelta(minutes=10)
SELECTION = ["bronze_ad_impressions", "bronze_ad_clicks", "gold_ad_attribution"]
BASE = datetime(2026, 11, 20, 10, 0)

Impression = tuple[str, str, str, datetime]  # impression_id, ad_id, user_id, impression_time
Click = tuple[str, str, datetime]  # click_id, impression_id, click_time


def at(minutes: float) -> datetime:
    return BASE + timedelta(minutes=minutes)


def iso(when: datetime) -> str:
    return when.isoformat(timespec="microseconds") + "Z"


def land(lh: Lakehouse, source: str, name: str, records: list[dict]) -> None:
    folder = lh.landing(source)
    temp = folder / f"_{name}"
    temp.write_text("".join(json.dumps(r) + "\n" for r in records))
    temp.rename(folder / name)


def land_round(lh: Lakehouse, run: int, impressions: list[Impression], clicks: list[Click], files: int = 1) -> None:
    imps = [{"impression_id": i, "ad_id": a, "user_id": u, "impression_time": iso(t)} for i, a, u, t in impressions]
    clks = [{"click_id": k, "impression_id": i, "click_time": iso(t)} for k, i, t in clicks]
    for part in range(files):
        if imps[part::files]:
            land(lh, "ad_impressions", f"impressions-{run}-{part}.jsonl", imps[part::files])
        if clks[part::files]:
            land(lh, "ad_clicks", f"clicks-{run}-{part}.jsonl", clks[part::files])


def millis(when: datetime) -> datetime:
    return when.replace(microsecond=when.microsecond // 1000 * 1000)


@dataclass
class Oracle:
    """The contract's answer, in plain Python, from the records landed in each run."""

    max_impression: datetime | None = None
    max_click: datetime | None = None
    watermark: datetime = datetime.min
    impressions: dict[str, Impression] = field(default_factory=dict)
    clicks: dict[str, Click] = field(default_factory=dict)
    seen_clicks: set[str] = field(default_factory=set)
    rows: dict[str, tuple] = field(default_factory=dict)
    late: list[int] = field(default_factory=list)

    def run(self, impressions: list[Impression], clicks: list[Click]) -> dict[str, tuple]:
        """The table's rows after a run that landed these records; ``late[-1]``: the rows the
        run drops as late (every copy at or behind the previous watermark)."""
        previous = self.watermark
        late = 0
        for record in impressions:
            if record[3] <= previous:
                late += 1
            elif record[0] not in self.impressions:
                self.impressions[record[0]] = record
        for record in clicks:
            if record[2] <= previous:
                late += 1
            elif record[0] not in self.clicks:
                self.clicks[record[0]] = record
        self.late.append(late)
        times_i = [r[3] for r in impressions]
        times_c = [r[2] for r in clicks]
        self.max_impression = max([t for t in [self.max_impression, *times_i] if t is not None], default=None)
        self.max_click = max([t for t in [self.max_click, *times_c] if t is not None], default=None)
        if self.max_impression is not None and self.max_click is not None:
            current = min(millis(self.max_impression), millis(self.max_click)) - LATENESS
            self.watermark = max(self.watermark, current)
        for iid, (_, ad, user, shown) in self.impressions.items():
            if iid in self.rows or not shown + WINDOW < self.watermark:
                continue
            matches = sorted((t, k) for k, i, t in self.clicks.values() if i == iid and shown <= t <= shown + WINDOW)
            click_time, click_id = matches[0] if matches else (None, None)
            self.rows[iid] = (iid, ad, user, shown, click_id, click_time, bool(matches))
        return dict(self.rows)


def table_rows(lh: Lakehouse) -> list[tuple]:
    return [tuple(r) for r in lh.table("gold_ad_attribution").collect()]


def assert_matches(actual: list[tuple], expected: dict[str, tuple], context: str) -> None:
    assert len(actual) == len({r[0] for r in actual}), f"{context}: an impression was written twice"
    got = {r[0]: r for r in actual}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"{context}: missing {missing}, early or unexpected {extra}"
    wrong = {i: (got[i], expected[i]) for i in expected if got[i] != expected[i]}
    assert not wrong, f"{context}: wrong rows {wrong}"


def ordered_feed(start: int, stop: int, click_until: int | None = None) -> tuple[list[Impression], list[Click]]:
    """An impression every 2 minutes in [start, stop] (minutes after 10:00), in time order;
    one in three clicked 3 minutes later, one in three exactly at its window's end, the rest
    clicked 11 minutes later (outside the window). Clicks in time order, up to ``click_until``."""
    impressions, clicks = [], []
    for minute in range(start, stop + 1, 2):
        iid = f"i{minute:04d}"
        impressions.append((iid, f"ad{minute % 5}", f"u{minute % 7}", at(minute)))
        delay = (3, 10, 11)[(minute // 2) % 3]
        if click_until is None or minute + delay <= click_until:
            clicks.append((f"k{minute:04d}", iid, at(minute + delay)))
    return impressions, sorted(clicks, key=lambda c: c[2])


@pytest.mark.slow
@pytest.mark.gate  # CI's representative of this file (docs/testing.md)
def test_ordered_feed_releases_exactly_the_windows_before_the_watermark(lakehouse: Lakehouse) -> None:
    oracle = Oracle()
    # Run 1: 10:00-12:00, clicks to 12:09 -> watermark min(12:00, 12:09) - 1 h = 11:00.
    rounds = [ordered_feed(0, 120), ([], []), ordered_feed(122, 160, click_until=150)]
    boundary = {1: at(60), 3: at(90)}  # run 3: min(12:40, 12:30) - 1 h = 11:30 (clicks lag)
    # Run 1 also: windows ending 1 ms before the watermark (11:00) and 1 ms after it, each
    # clicked exactly at its window's end.
    ms = timedelta(milliseconds=1)
    edges = [("edge-before", at(50) - ms), ("edge-after", at(50) + ms)]
    imps, clks = rounds[0]
    imps += [(iid, "ad0", "u0", shown) for iid, shown in edges]
    clks += [(f"k{iid}", iid, shown + WINDOW) for iid, shown in edges]
    imps.sort(key=lambda r: r[3])
    clks.sort(key=lambda r: r[2])
    previous: list[tuple] | None = None
    for run, (impressions, clicks) in enumerate(rounds, start=1):
        if impressions or clicks:
            land_round(lakehouse, run, impressions, clicks)
        assert lakehouse.materialize(SELECTION).success
        expected = oracle.run(impressions, clicks)
        actual = table_rows(lakehouse)
        assert_matches(actual, expected, f"run {run}")
        if run in boundary:
            wm = boundary[run]
            assert oracle.watermark == wm
            ids = {r[0] for r in actual}
            # Just before the watermark: present; window ending at it or later: absent.
            before, on, after = (f"i{int((wm - WINDOW - BASE).total_seconds() // 60) + d:04d}" for d in (-2, 0, 2))
            assert before in ids and on not in ids and after not in ids, (run, before, on, after)
        if run == 1:
            edge = {r[0]: r for r in actual if r[0].startswith("edge")}
            assert list(edge) == ["edge-before"] and edge["edge-before"][6] is True, edge
        if run == 2:
            assert sorted(actual) == sorted(previous or []), "a run without new data changed the table"
        previous = actual
    assert sum(oracle.late) == 0


def shuffled_rounds(seed: int, runs: int = 4, per_run: int = 30) -> list[tuple[list[Impression], list[Click]]]:
    """Runs of 40 minutes of impressions each, landed shuffled: clicks (some before their
    impression, some after its window, some at its end) in the same run or the next, a tenth of
    impressions only in the next run (after their clicks), re-deliveries, and late rows more
    than an hour behind the newest data (behind the watermark when they land)."""
    rng = random.Random(seed)
    rounds: list[tuple[list[Impression], list[Click]]] = [([], []) for _ in range(runs + 1)]
    for run in range(runs):
        for n in range(per_run):
            shown = at(40 * run + rng.uniform(0, 40)).replace(microsecond=rng.choice([0, 0, 123000, 999999]))
            iid = f"i{run}-{n:02d}"
            record = (iid, f"ad{rng.randrange(4)}", f"u{rng.randrange(9)}", shown)
            rounds[run + (rng.random() < 0.1)][0].append(record)
            if rng.random() < 0.1:
                rounds[min(run + 2, runs)][0].append(record)  # re-delivered (late by then or not)
            if rng.random() < 0.6:
                delay = rng.choice([timedelta(minutes=rng.uniform(-2, 13)), WINDOW, timedelta(0)])
                click = (f"k{iid}", iid, shown + delay)
                rounds[run + (rng.random() < 0.3)][1].append(click)
                if rng.random() < 0.15:
                    rounds[run + 1][1].append(click)  # re-delivered
        if run >= 2:  # late arrivals: new ids, times well behind the watermark
            for n in range(3):
                old = at(40 * (run - 2) - 30 + n)
                rounds[run][0].append((f"late{run}-{n}", "ad9", "u9", old))
                rounds[run][1].append((f"klate{run}-{n}", f"i{run - 2}-{n:02d}", old))
    for impressions, clicks in rounds:
        rng.shuffle(impressions)
        rng.shuffle(clicks)
    return rounds


@pytest.mark.slow
def test_shuffled_late_feed_has_every_window_before_the_watermark(lakehouse: Lakehouse) -> None:
    oracle = Oracle()
    released_by_run = []
    for run, (impressions, clicks) in enumerate(shuffled_rounds(seed=22), start=1):
        land_round(lakehouse, run, impressions, clicks, files=2)
        result = lakehouse.materialize(SELECTION)
        assert result.success
        expected = oracle.run(impressions, clicks)
        assert_matches(table_rows(lakehouse), expected, f"run {run}")
        released_by_run.append(len(expected))
        (event,) = [m for m in result.get_asset_materialization_events() if m.asset_key.path == ["gold_ad_attribution"]]
        meta = {k: v.value for k, v in event.materialization.metadata.items()}
        assert meta.get("dropped_late", 0) == oracle.late[-1], f"run {run}"
    # The scenario exercises what it means to: rows released in every run, late rows dropped.
    assert len(set(released_by_run)) >= 4 and released_by_run[-1] > released_by_run[1] > 0, released_by_run
    assert sum(oracle.late) > 0
