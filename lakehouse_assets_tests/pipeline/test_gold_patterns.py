"""Gold patterns: running totals (gold_customer_ltv), session windows with a watermark
(gold_user_sessions) and impressions attributed to clicks (gold_ad_attribution).

Pure transforms are checked on small DataFrames; then one scenario of three incremental runs
is materialized and every table compared, after every run, with an answer computed in plain
Python from the contract: which sessions and impressions have closed, which late rows the
watermark dropped (counted in the materialization metadata, never written).

With ``trigger(availableNow=True)`` the watermark moves only when new data arrives: a session
or an attribution window closes in the run whose data moves the watermark past its end (Spark
runs one last no-data micro-batch at the end of that run to emit it), never later on its own.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from lakehouse_assets.defs.gold.ad_attribution import attribute_clicks
from lakehouse_assets.defs.gold.customer_ltv import customer_ltv
from lakehouse_assets.defs.gold.user_sessions import user_sessions
from verification.expected import close
from verification.lakehouse import Lakehouse

LATENESS = timedelta(hours=1)
GAP = timedelta(minutes=30)
WINDOW = timedelta(minutes=10)
SELECTION = [
    "bronze_events", "silver_events", "gold_customer_ltv", "gold_user_sessions",
    "bronze_ad_impressions", "bronze_ad_clicks", "gold_ad_attribution",
]  # fmt: skip


def t(hhmm: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-20T{hhmm}:00")


# -- pure transforms ---------------------------------------------------------------------------

EVENT_SCHEMA = "event_id string, event_time timestamp, user_id string, event_type string, amount double"


def test_user_sessions_split_on_a_30_minute_gap(spark: SparkSession) -> None:
    events = spark.createDataFrame(
        [
            ("1", t("10:00"), "u1", "page_view", None),
            ("2", t("10:29"), "u1", "purchase", 12.5),
            ("3", t("11:00"), "u1", "add_to_cart", None),  # 31 minutes later: a new session
            ("4", t("10:05"), "u2", "purchase", 2.0),
            ("5", t("10:06"), None, "page_view", None),  # no user, no session
        ],
        EVENT_SCHEMA,
    )
    expected = spark.createDataFrame(
        [
            ("u1", t("10:00"), t("10:59"), 2, 1, 1, 12.5),
            ("u1", t("11:00"), t("11:30"), 1, 0, 0, 0.0),
            ("u2", t("10:05"), t("10:35"), 1, 0, 1, 2.0),
        ],
        "user_id string, session_start timestamp, session_end timestamp, events long, "
        "page_views long, purchases long, revenue double",
    )
    assertDataFrameEqual(user_sessions(events), expected)


def test_customer_ltv_totals_purchases_per_user(spark: SparkSession) -> None:
    events = spark.createDataFrame(
        [
            ("1", t("10:00"), "u1", "purchase", 10.0),
            ("2", t("12:00"), "u1", "purchase", 5.5),
            ("3", t("11:00"), "u1", "page_view", None),
            ("4", t("09:00"), "u2", "add_to_cart", None),
        ],
        EVENT_SCHEMA,
    )
    expected = spark.createDataFrame(
        [("u1", 15.5, 2, t("10:00"), t("12:00"))],
        "user_id string, lifetime_revenue double, orders long, first_purchase_at timestamp, last_purchase_at timestamp",
    )
    assertDataFrameEqual(customer_ltv(events), expected)


def test_attribution_window_and_deduplication(spark: SparkSession) -> None:
    impressions = spark.createDataFrame(
        [
            ("i1", "a1", "u1", "2026-11-20T10:00:00Z"),
            ("i1", "a1", "u1", "2026-11-20T10:00:00Z"),  # re-delivered
            ("i2", "a2", "u2", "2026-11-20T10:00:00Z"),
            ("i3", "a3", "u3", "2026-11-20T12:00:00+02:00"),
            ("i4", "a4", "u4", "not a time"),  # left out, stays in bronze
            ("i5", "a5", "u5", "2026-11-20T10:00:00Z"),
        ],
        "impression_id string, ad_id string, user_id string, impression_time string",
    )
    clicks = spark.createDataFrame(
        [
            ("k1", "i1", "2026-11-20T10:10:00Z"),  # the window's end is included
            ("k1", "i1", "2026-11-20T10:10:00Z"),  # re-delivered
            ("k2", "i2", "2026-11-20T10:10:01Z"),  # one second too late
            ("k3", "i3", "2026-11-20T09:59:59Z"),  # before the impression
            ("k5b", "i5", "2026-11-20T10:04:00Z"),
            ("k5a", "i5", "2026-11-20T10:02:00Z"),  # the earliest click in the window counts
            ("k9", "i9", "2026-11-20T10:00:00Z"),  # an impression never seen: no row
        ],
        "click_id string, impression_id string, click_time string",
    )
    expected = spark.createDataFrame(
        [
            ("i1", "a1", "u1", t("10:00"), "k1", t("10:10"), True),
            ("i2", "a2", "u2", t("10:00"), None, None, False),
            ("i3", "a3", "u3", t("10:00"), None, None, False),
            ("i5", "a5", "u5", t("10:00"), "k5a", t("10:02"), True),
        ],
        "impression_id string, ad_id string, user_id string, impression_time timestamp, "
        "click_id string, click_time timestamp, clicked boolean",
    )
    assertDataFrameEqual(attribute_clicks(impressions, clicks), expected)


# -- the scenario: three runs -----------------------------------------------------------------

# (event_id, event_time, user_id, event_type, amount) landed in each run.
EVENTS = {
    1: [
        ("e1", "10:00", "u1", "page_view", None),
        ("e2", "10:10", "u1", "purchase", 10.0),
        ("e3", "10:20", "u1", "page_view", None),
        ("e4", "10:05", "u2", "page_view", None),
        ("e5", "12:00", "u1", "page_view", None),  # watermark -> 11:00: closes u1@10:00, u2@10:05
    ],
    2: [
        ("e6", "10:15", "u1", "purchase", 20.0),  # behind the watermark (11:00): dropped, counted
        ("e7", "11:50", "u2", "add_to_cart", None),  # late but within the allowed lateness
        ("e8", "13:40", "u2", "purchase", 5.0),  # watermark -> 12:40
        ("e2", "10:10", "u1", "purchase", 10.0),  # re-delivered: silver keeps one
    ],
    3: [
        ("e9", "15:30", "u3", "page_view", None),  # watermark -> 14:30
        # Behind the watermark (12:40): dropped and counted, though Spark's session window alone
        # would accept it (12:30 + 30 min is after 12:40).
        ("e10", "12:30", "u2", "purchase", 7.0),
    ],
}
# (impression_id, ad_id, user_id, impression_time) and (click_id, impression_id, click_time).
IMPRESSIONS = {
    1: [("i1", "a1", "u1", "10:00"), ("i2", "a2", "u2", "10:00"), ("i3", "a1", "u1", "10:30"),
        ("i4", "a3", "u3", "11:50"), ("i5", "a1", "u2", "12:00")],
    2: [("i6", "a2", "u1", "13:30")],
    3: [("i7", "a3", "u3", "15:00"), ("i8", "a1", "u1", "15:00"), ("i2", "a2", "u2", "10:00")],
}  # fmt: skip
CLICKS = {
    1: [("k1", "i1", "10:05"), ("k2", "i2", "10:20"), ("k5", "i5", "12:01")],
    2: [("k4", "i4", "11:55"), ("k3", "i3", "10:35"), ("k1", "i1", "10:05"), ("k6", "i6", "13:31")],
    3: [("k8", "i8", "15:02")],
}


def land(lh: Lakehouse, source: str, name: str, records: list[dict]) -> None:
    folder = lh.landing(source)
    temp = folder / f"_{name}"
    temp.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    temp.rename(folder / name)


def iso(hhmm: str) -> str:
    return f"2026-11-20T{hhmm}:00Z"


def land_run(lh: Lakehouse, run: int) -> None:
    land(lh, "events", f"events-{run}.jsonl", [
        {"event_id": e, "event_time": iso(at), "user_id": u, "event_type": kind, "amount": amount,
         "category": "books" if amount else None}
        for e, at, u, kind, amount in EVENTS[run]
    ])  # fmt: skip
    land(lh, "ad_impressions", f"impressions-{run}.jsonl", [
        {"impression_id": i, "ad_id": ad, "user_id": u, "impression_time": iso(at)}
        for i, ad, u, at in IMPRESSIONS[run]
    ])  # fmt: skip
    land(lh, "ad_clicks", f"clicks-{run}.jsonl", [
        {"click_id": k, "impression_id": i, "click_time": iso(at)} for k, i, at in CLICKS[run]
    ])  # fmt: skip


class Expected:
    """The contract's answers, in plain Python, after each run: a watermark is the latest event
    time seen minus the allowed lateness (the minimum over both inputs for the join); rows
    behind the watermark of the previous run are dropped and counted; a session or window
    appears in the run whose watermark passes its end."""

    def __init__(self) -> None:
        self.ltv: dict[int, dict] = {}
        self.sessions: dict[int, dict] = {}
        self.sessions_late: dict[int, int] = {}
        self.attribution: dict[int, dict] = {}
        self.attribution_late: dict[int, int] = {}
        silver: dict[str, tuple] = {}
        accepted: list[tuple] = []
        emitted: dict[tuple, tuple] = {}
        wm = datetime.min
        max_event = datetime.min
        imps: dict[str, tuple] = {}
        clicks: dict[str, tuple] = {}
        max_imp = max_click = datetime.min
        wm_ads = datetime.min
        rows: dict[str, tuple] = {}
        for run in (1, 2, 3):
            # Running totals over every silver event, late or not.
            for e, at, u, kind, amount in EVENTS[run]:
                silver.setdefault(e, (t(at), u, kind, amount))
            totals: dict[str, list] = {}
            for at, u, kind, amount in silver.values():
                if kind == "purchase":
                    cur = totals.setdefault(u, [0.0, 0, at, at])
                    cur[0] += amount
                    cur[1] += 1
                    cur[2], cur[3] = min(cur[2], at), max(cur[3], at)
            self.ltv[run] = {u: tuple(v) for u, v in totals.items()}
            # Sessions: new distinct events behind the watermark are dropped.
            fresh = [(e, t(at), u, kind, amount) for e, at, u, kind, amount in EVENTS[run]
                     if e not in {a[0] for a in accepted}]  # fmt: skip
            fresh = list({f[0]: f for f in fresh}.values())
            late = [f for f in fresh if f[1] <= wm]
            self.sessions_late[run] = len(late)
            accepted += [f for f in fresh if f[1] > wm]
            max_event = max([max_event, *[f[1] for f in fresh]])
            wm = max_event - LATENESS
            for session in self._sessions(accepted):
                if session[2] <= wm:
                    emitted.setdefault(session[:2], session)
            self.sessions[run] = dict(emitted)
            # Attribution: dedupe, drop late rows, join in the window, close windows.
            n_late = 0
            for i, ad, u, at in IMPRESSIONS[run]:
                if i in imps:
                    n_late += t(at) <= wm_ads  # a re-delivery after its state expired
                    continue
                if t(at) <= wm_ads:
                    n_late += 1
                    continue
                imps[i] = (ad, u, t(at), run)
            for k, i, at in CLICKS[run]:
                if k in clicks or t(at) <= wm_ads:
                    n_late += k not in clicks or t(at) <= wm_ads
                    continue
                clicks[k] = (i, t(at), run)
            self.attribution_late[run] = n_late
            max_imp = max([max_imp, *[t(r[3]) for r in IMPRESSIONS[run]]])
            max_click = max([max_click, *[t(r[2]) for r in CLICKS[run]]])
            wm_ads = min(max_imp, max_click) - LATENESS
            for i, (ad, u, at, _) in imps.items():
                if i in rows or at + WINDOW >= wm_ads:
                    continue  # written already, or its window has not passed the watermark yet
                match = [(k, c_at) for k, (ci, c_at, _) in clicks.items() if ci == i and at <= c_at <= at + WINDOW]
                if match:
                    ((k, c_at),) = match
                    rows[i] = (i, ad, u, at, k, c_at, True)
                else:
                    rows[i] = (i, ad, u, at, None, None, False)
            self.attribution[run] = dict(rows)

    @staticmethod
    def _sessions(events: list[tuple]) -> list[tuple]:
        by_user: dict[str, list] = defaultdict(list)
        for e in events:
            by_user[e[2]].append(e)
        sessions = []
        for user, evs in by_user.items():
            evs.sort(key=lambda e: e[1])
            group: list = []
            for e in [*evs, None]:
                if group and (e is None or e[1] - group[-1][1] >= GAP):
                    purchases = [g for g in group if g[3] == "purchase"]
                    sessions.append((
                        user, group[0][1], group[-1][1] + GAP, len(group),
                        sum(g[3] == "page_view" for g in group), len(purchases),
                        float(sum(g[4] for g in purchases)),
                    ))  # fmt: skip
                    group = []
                if e is not None:
                    group.append(e)
        return sessions


def metadata(result, asset: str) -> dict:
    (event,) = [m for m in result.get_asset_materialization_events() if m.asset_key.path == [asset]]
    return {k: v.value for k, v in event.materialization.metadata.items()}


@pytest.fixture(scope="module")
def gold_runs(module_lakehouse: Lakehouse) -> dict:
    lh = module_lakehouse
    snapshots = {}
    for run in (1, 2, 3):
        land_run(lh, run)
        result = lh.materialize(SELECTION)
        assert result.success
        snapshots[run] = {
            "ltv": {r["user_id"]: tuple(r)[1:] for r in lh.table("gold_customer_ltv").collect()},
            "sessions": [tuple(r) for r in lh.table("gold_user_sessions").collect()],
            "attribution": [tuple(r) for r in lh.table("gold_ad_attribution").collect()],
            "sessions_meta": metadata(result, "gold_user_sessions"),
            "attribution_meta": metadata(result, "gold_ad_attribution"),
        }
    return {"lh": lh, "snapshots": snapshots, "expected": Expected()}


RUNS = [1, 2, 3]


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_customer_ltv_is_exact_after_every_run(gold_runs: dict, run: int) -> None:
    actual = gold_runs["snapshots"][run]["ltv"]
    expected = gold_runs["expected"].ltv[run]
    assert set(actual) == set(expected)
    for user, (revenue, orders, first, last) in expected.items():
        got = actual[user]
        assert close(got[0], revenue) and got[1:] == (orders, first, last), user


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_sessions_appear_once_closed_exactly_once(gold_runs: dict, run: int) -> None:
    actual = gold_runs["snapshots"][run]["sessions"]
    expected = gold_runs["expected"].sessions[run]
    assert len(actual) == len({s[:2] for s in actual}), "a session was written twice"
    assert sorted(actual) == sorted(expected.values())


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_events_behind_the_watermark_are_counted_not_written(gold_runs: dict, run: int) -> None:
    meta = gold_runs["snapshots"][run]["sessions_meta"]
    assert meta.get("dropped_late", 0) == gold_runs["expected"].sessions_late[run]


@pytest.mark.slow
def test_which_run_each_session_appears_in(gold_runs: dict) -> None:
    """Spelled out: sessions close in the run whose data passes their end, not before."""
    snapshots = gold_runs["snapshots"]
    first_seen = {}
    for run in RUNS:
        for s in snapshots[run]["sessions"]:
            first_seen.setdefault((s[0], s[1].strftime("%H:%M")), run)
    assert first_seen == {
        ("u1", "10:00"): 1,  # e5 (12:00) moves the watermark to 11:00 in run 1
        ("u2", "10:05"): 1,
        ("u1", "12:00"): 2,  # e8 (13:40): watermark 12:40
        ("u2", "11:50"): 2,  # e7 arrived late, within the allowed lateness
        ("u2", "13:40"): 3,  # e9 (15:30): watermark 14:30 passes 14:10
    }  # u3@15:30 stays open: no later data has passed it yet
    u1_first = next(s for s in snapshots[3]["sessions"] if s[0] == "u1" and s[1] == t("10:00"))
    assert u1_first[3:] == (3, 2, 1, 10.0), "the late e6 must not change a closed session"


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_attribution_has_one_row_per_closed_impression(gold_runs: dict, run: int) -> None:
    actual = gold_runs["snapshots"][run]["attribution"]
    expected = gold_runs["expected"].attribution[run]
    assert len(actual) == len({r[0] for r in actual}), "an impression was written twice"
    assert sorted(actual, key=lambda r: r[0]) == sorted(expected.values(), key=lambda r: r[0])


@pytest.mark.slow
def test_which_run_each_impression_appears_in(gold_runs: dict) -> None:
    snapshots = gold_runs["snapshots"]
    first_seen = {}
    for run in RUNS:
        for r in snapshots[run]["attribution"]:
            first_seen.setdefault(r[0], (run, r[6]))
    # Watermark (min of both sides' latest time - 1 hour) after run 1: 11:00, run 2: 12:30, run 3: 14:00.
    assert first_seen == {
        "i1": (1, True),  # clicked at 10:05; its window [10:00, 10:10] passed the watermark in run 1
        "i2": (1, False),  # click at 10:20 is outside [10:00, 10:10]
        "i3": (1, False),  # its click (10:35) arrives in run 2, too late: stays unclicked
        "i4": (2, True),  # click arrives in the next run, within the allowed lateness
        "i5": (2, True),  # clicked in run 1, but its window (to 12:10) passes the watermark in run 2
        "i6": (3, True),  # clicked in run 2, window to 13:40: written in run 3
    }  # i7 and i8 (15:00, i8 clicked) wait for the watermark to pass 15:10


@pytest.mark.slow
def test_late_clicks_and_redeliveries_are_counted(gold_runs: dict) -> None:
    snapshots, expected = gold_runs["snapshots"], gold_runs["expected"]
    for run in RUNS:
        meta = snapshots[run]["attribution_meta"]
        assert meta.get("dropped_late", 0) == expected.attribution_late[run], run
        assert meta["state_rows"] >= 0
