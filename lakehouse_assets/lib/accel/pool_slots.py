"""Dagster's PostgreSQL event log storage with a pool slot that one step at a time can hold.

Dagster 1.13 claims a pool slot in two statements: it selects a free slot ``FOR UPDATE SKIP
LOCKED``, then sets that slot's step by id. ``dagster-postgres`` runs every statement in
autocommit, so the row lock ends with the select, and two steps claiming the one free slot of a
pool in the same instant both get it (seen in CI: two runs wrote ``bronze_customers`` from starts
0.4 ms apart; the framework's OS lock kept them apart, but only on a local data root). Here the
second statement sets the slot only while it is still free (``WHERE id = ? AND step_key IS
NULL``): PostgreSQL applies the two updates one after the other and the later one changes no row.
That step stays assigned and retries its claim on Dagster's back-off (1 s, growing to 15 s), and
gets the slot on a retry after the holder frees it (possibly after a step assigned later: Dagster
assigned both, so the queue order between them is lost).

Everything else is ``dagster-postgres``. ``dagster.yaml`` names the class as its
``event_log_storage``, beside Postgres run and schedule storage: docs/scale-out.md shows the block,
``devstack/postgres.py`` writes it.

SQLite (one machine) keeps Dagster's claim: its storage takes a path Dagster derives from
``DAGSTER_HOME``, which a class named in ``dagster.yaml`` does not get; there the OS lock around
each table's query keeps writers apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as db
from dagster_postgres import PostgresEventLogStorage as _DagsterPostgresEventLogStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config

from lakehouse_assets.lib.orchestrate.dagster_internals import (
    ConcurrencySlotsTable,
    ConcurrencySlotStatus,
    ConfigurableClassData,
    db_select,
)


class PostgresEventLogStorage(_DagsterPostgresEventLogStorage):
    """``dagster-postgres``'s event log storage whose pool slot claim holds for one step."""

    @classmethod
    def from_config_value(  # dagster-postgres builds its own class here, not cls
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PostgresEventLogStorage:
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )

    def _claim_concurrency_slot(self, concurrency_key: str, run_id: str, step_key: str) -> ConcurrencySlotStatus:
        free = db.and_(
            ConcurrencySlotsTable.c.concurrency_key == concurrency_key,
            ConcurrencySlotsTable.c.step_key.is_(None),
            ConcurrencySlotsTable.c.deleted.is_(False),
        )
        with self.index_connection() as conn:
            row = conn.execute(
                db_select([ConcurrencySlotsTable.c.id]).where(free).with_for_update(skip_locked=True).limit(1)
            ).fetchone()
            if not row:
                return ConcurrencySlotStatus.BLOCKED
            claimed = conn.execute(
                ConcurrencySlotsTable.update()
                .values(run_id=run_id, step_key=step_key)
                .where(db.and_(ConcurrencySlotsTable.c.id == row[0], free))
            ).rowcount
        return ConcurrencySlotStatus.CLAIMED if claimed else ConcurrencySlotStatus.BLOCKED
