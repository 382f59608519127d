"""The example SDP project's input, generated here, and its tables computed by hand from it."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from pathlib import Path

ORDER_KEYS = ("order_id", "customer_id", "amount", "ordered_at")


def orders(shop: str, round_no: int, count: int = 8) -> list[dict]:
    """``count`` orders and one without an id; some amounts not positive (invalid)."""
    rows = [
        {"order_id": f"{shop}{round_no}-{i}", "customer_id": f"c{(i * 7 + round_no) % 5}",
         "amount": round(12.5 * (i % 8) - 10 + round_no, 2), "ordered_at": f"2026-03-{(round_no - 1) % 28 + 1:02d}T1{i % 10}:00:00"}
        for i in range(count)
    ]  # fmt: skip
    rows.append({"order_id": None, "customer_id": "c1", "amount": 5.0, "ordered_at": "2026-03-01T00:00:00"})
    return rows


def _change(
    c: int, day: int, second: int, tier: str, country: str, op: str = "UPSERT", minute: int = 0, hour: int = 0
) -> dict:
    return {"customer_id": f"c{c}", "name": f"name{c}", "tier": tier, "country": country,
            "updated_at": f"2026-03-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}", "op": op}  # fmt: skip


def _random_changes(round_no: int) -> list[dict]:
    """Round ``round_no``'s (> 2) new changes. Hour, minute and second make every change's time
    unique (to round 1,440): a tie in sequence_by has no answer."""
    draw = random.Random(round_no)
    return [
        _change(draw.randrange(8), draw.randint(1, 28), round_no % 60, draw.choice(["gold", "silver", "bronze"]),
                draw.choice(["DE", "FR", "US", "CA"]), "DELETE" if draw.random() < 0.15 else "UPSERT",
                minute=1 + i, hour=1 + round_no // 60)
        for i in range(6)
    ]  # fmt: skip


def customer_changes(round_no: int) -> list[dict]:
    """Upserts and a delete; round 2 also re-delivers a round-1 change and brings a late one
    (older than what round 1 already applied for that customer). Later rounds (for ``make
    chaos-sdp``) are random changes, deletes, late ones and a re-delivery of the round before's first."""
    change = _change
    if round_no > 2:
        previous = _random_changes(round_no - 1) if round_no > 3 else customer_changes(2)
        return [*_random_changes(round_no), previous[0]]
    if round_no == 1:
        return [change(0, 1, 0, "gold", "DE"), change(1, 1, 0, "silver", "FR"), change(2, 1, 0, "gold", "US"),
                change(3, 1, 0, "bronze", "US"), change(1, 2, 0, "gold", "FR")]  # fmt: skip
    return [
        change(0, 3, 0, "silver", "DE"),  # a new version
        change(1, 2, 0, "gold", "FR"),  # re-delivered
        change(2, 1, 30, "platinum", "US"),  # late: between round 1's version and nothing newer
        change(3, 4, 0, "bronze", "US", "DELETE"),
        change(4, 3, 0, "gold", "CA"),
        change(0, 3, 30, "silver", "DE"),  # same tracked values: no new version
    ]


def land(landing: Path, folder: str, name: str, rows: list[dict]) -> None:
    target = landing / folder
    target.mkdir(parents=True, exist_ok=True)
    temporary = target / f"_{name}"
    temporary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    temporary.rename(target / name)


def land_round(landing: Path, round_no: int, orders_per_file: int = 8) -> tuple[list[dict], list[dict], list[dict]]:
    """Land round ``round_no``'s file of each source; its (EU orders, US orders, changes)."""
    new = orders("eu", round_no, orders_per_file), orders("us", round_no, orders_per_file), customer_changes(round_no)
    for folder, rows in zip(("orders_eu", "orders_us", "customers"), new, strict=True):
        land(landing, folder, f"{round_no}.json", rows)
    return new


def silver_orders(eu: list[dict], us: list[dict]) -> set[tuple]:
    return {
        (o["order_id"], o["customer_id"], o["amount"], region)
        for rows, region in ((eu, "EU"), (us, "US"))
        for o in rows
        if o["order_id"] is not None and o["amount"] > 0
    }


def _in_order(changes: list[dict]) -> dict[str, list[dict]]:
    by_key: dict[str, dict[str, dict]] = defaultdict(dict)
    for c in changes:
        seen = by_key[c["customer_id"]].setdefault(c["updated_at"], c)  # a re-delivery is the same change
        if seen != c:
            raise ValueError(f"two different changes of {c['customer_id']} at {c['updated_at']}: no single answer")
    return {k: [v[t] for t in sorted(v)] for k, v in by_key.items()}


def customers_scd1(changes: list[dict]) -> set[tuple]:
    latest = {k: v[-1] for k, v in _in_order(changes).items()}
    return {(k, c["name"], c["tier"], c["country"], c["updated_at"]) for k, c in latest.items() if c["op"] != "DELETE"}


def customers_scd2(changes: list[dict]) -> set[tuple]:
    """(id, tier, country, valid_from, valid_to): a version opens when tier or country changes
    or after a delete, and closes at the next opening or delete."""
    versions = set()
    for key, ordered in _in_order(changes).items():
        opened: list[list] = []
        for c in ordered:
            current = opened[-1] if opened and opened[-1][4] is None else None
            if c["op"] == "DELETE":
                if current:
                    current[4] = c["updated_at"]
                continue
            if current and (current[1], current[2]) == (c["tier"], c["country"]):
                continue
            if current:
                current[4] = c["updated_at"]
            opened.append([key, c["tier"], c["country"], c["updated_at"], None])
        versions |= {tuple(v) for v in opened}
    return versions


def customer_revenue(silver: set[tuple]) -> dict[str, tuple[float, int]]:
    totals: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for _, customer, amount, _ in silver:
        totals[customer][0] += amount
        totals[customer][1] += 1
    return {k: (round(v[0], 2), v[1]) for k, v in totals.items()}


def revenue_by_country(silver: set[tuple], current: set[tuple]) -> dict[str, float]:
    country = {c[0]: c[3] for c in current}
    totals: dict[str, float] = defaultdict(float)
    for _, customer, amount, _ in silver:
        totals[country.get(customer, "unknown")] += amount
    return {k: round(v, 2) for k, v in totals.items()}


# The columns each table is compared on, in the order of expected_rows' tuples.
COMPARED_COLUMNS = {
    "bronze_orders_eu": ("order_id", "customer_id", "amount"),
    "bronze_orders_us": ("order_id", "customer_id", "amount"),
    "bronze_customer_changes": ("customer_id", "updated_at", "op"),
    "silver_orders": ("order_id", "customer_id", "amount", "region"),
    "customers": ("customer_id", "name", "tier", "country", "updated_at"),
    "customers_history": ("customer_id", "tier", "country", "valid_from", "valid_to"),
    "customer_revenue": ("customer_id", "revenue", "orders"),
    "revenue_by_country": ("country", "revenue"),
}


def expected_rows(eu: list[dict], us: list[dict], changes: list[dict]) -> dict[str, Counter]:
    """Every table of the example as a multiset of :data:`COMPARED_COLUMNS` tuples (times as
    ``YYYY-MM-DDTHH:MM:SS`` text)."""
    silver = silver_orders(eu, us)
    current = customers_scd1(changes)
    return {
        "bronze_orders_eu": Counter((o["order_id"], o["customer_id"], o["amount"]) for o in eu),
        "bronze_orders_us": Counter((o["order_id"], o["customer_id"], o["amount"]) for o in us),
        "bronze_customer_changes": Counter((c["customer_id"], c["updated_at"], c["op"]) for c in changes),
        "silver_orders": Counter(silver),
        "customers": Counter(current),
        "customers_history": Counter(customers_scd2(changes)),
        "customer_revenue": Counter((k, *v) for k, v in customer_revenue(silver).items()),
        "revenue_by_country": Counter(revenue_by_country(silver, current).items()),
    }
