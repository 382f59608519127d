"""What a table's lease says, and what a writer does next: the pure part of the table lease
(:mod:`lakehouse_assets.lib.engine.locking.table_lease`), with no storage and no clock of its own.

A lease is a sequence of generations, one object each (``000000000007.lease``), created only
if absent. The newest generation is the lease: its creator holds it until it marks it released,
or until it stops renewing it. Expiry is judged on the waiting writer's own monotonic clock: a
generation seen unchanged (same token, same renewal count) for its holder's whole lease duration
has expired. No two machines' clocks are compared.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace

SUFFIX = ".lease"


@dataclass(frozen=True)
class LeaseRecord:
    """One generation of a table's lease, as stored.

    :param generation: its number, 1 for the table's first writer.
    :param token: unique to the writer that created it.
    :param holder: who holds it, for people (a Dagster run, else empty).
    :param host: the holder's machine.
    :param pid: the holder's process.
    :param since: when it was taken (UTC, ISO 8601), for people.
    :param ttl_s: the holder renews it within this many seconds, or it has expired.
    :param renewals: how many times it was renewed.
    :param released: its holder let go of it.
    """

    generation: int
    token: str
    holder: str
    host: str
    pid: int
    since: str
    ttl_s: float
    renewals: int = 0
    released: bool = False

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_bytes(cls, generation: int, data: bytes, default_ttl_s: float) -> LeaseRecord:
        """The record stored as generation ``generation``; one that does not parse is held by an
        unknown writer and expires like any other."""
        try:
            stored = json.loads(data)
            known = {f.name for f in fields(cls)}  # a newer writer's extra fields are ignored
            return cls(**{**{k: v for k, v in stored.items() if k in known}, "generation": generation})
        except (ValueError, TypeError, AttributeError):
            return cls(generation, f"unreadable:{hash(data)}", "an unknown writer", "?", 0, "?", default_ttl_s)

    def renewed(self) -> LeaseRecord:
        return replace(self, renewals=self.renewals + 1)

    def let_go(self) -> LeaseRecord:
        return replace(self, released=True)

    def describe(self) -> str:
        """The holder in words, e.g. ``run 1a2b3c4d on host-1 (pid 812) since 2026-11-27T18:52:10Z``."""
        return f"{self.holder or 'a writer'} on {self.host} (pid {self.pid}) since {self.since}"


def object_name(generation: int) -> str:
    return f"{generation:012d}{SUFFIX}"


def generations(names: list[str]) -> list[int]:
    """The generation numbers among a lease folder's object names, oldest first."""
    return sorted(int(n.removesuffix(SUFFIX)) for n in names if n.endswith(SUFFIX) and n[: -len(SUFFIX)].isdigit())


@dataclass(frozen=True)
class Sighting:
    """What a waiting writer saw of the newest generation, and when it first saw it so (its own
    monotonic clock)."""

    generation: int
    token: str
    renewals: int
    at: float

    def matches(self, record: LeaseRecord) -> bool:
        return (self.generation, self.token, self.renewals) == (record.generation, record.token, record.renewals)


@dataclass(frozen=True)
class Take:
    """Create this generation: the lease is free (none yet, released, or expired)."""

    generation: int
    expired: LeaseRecord | None = None


@dataclass(frozen=True)
class Wait:
    """Another writer holds the lease; look again later, remembering ``sighting``."""

    holder: LeaseRecord
    sighting: Sighting


def next_step(newest: LeaseRecord | None, sighting: Sighting | None, now: float) -> Take | Wait:
    """The next step of a writer that wants the lease.

    :param newest: the newest generation (None: the table never had a writer).
    :param sighting: what this writer saw at its previous look (None: first look).
    :param now: this writer's monotonic clock.
    """
    if newest is None:
        return Take(1)
    if newest.released:
        return Take(newest.generation + 1)
    if sighting is None or not sighting.matches(newest):
        return Wait(newest, Sighting(newest.generation, newest.token, newest.renewals, now))
    if now - sighting.at >= newest.ttl_s:
        return Take(newest.generation + 1, expired=newest)
    return Wait(newest, sighting)


def still_held(newest: LeaseRecord | None, generation: int, token: str) -> bool:
    """The fencing rule: the holder of ``generation`` (``token``) may still write only while its
    generation is the newest and not released."""
    return newest is not None and newest.generation == generation and newest.token == token and not newest.released
