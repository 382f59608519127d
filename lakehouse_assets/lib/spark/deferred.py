"""A session that comes into being on first use, so a run that finds nothing new starts no JVM.

A step hands the engine its session before anyone knows whether the table has anything to
read. Most runs of a steady feed find nothing new for most tables: the idle skip, the writer
lock, the checkpoint guard and the metadata all read files, not Spark. Embedded, creating the
session is a JVM start (~5 s on 2 cores); as a client of an engine, a new Connect session
(~0.5 s). :func:`deferred_session` puts that off until an attribute of the session is first
read, then every attribute is the real session's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

from pyspark.sql import SparkSession


class SessionNotStarted(Exception):
    """Creating the session failed (``__cause__`` says why, and the message is its message): the
    run's failure, whichever of its parts first needed Spark, e.g. a check in its own thread."""


class _DeferredSession:
    """Stands for the session ``create`` returns, calling it on first attribute access."""

    __slots__ = ("_create", "_lock", "_session")

    def __init__(self, create: Callable[[], SparkSession]) -> None:
        self._create = create
        self._lock = threading.Lock()  # a run's checks use it from several threads
        self._session: SparkSession | None = None

    def real(self) -> SparkSession:
        with self._lock:
            if self._session is None:
                try:
                    self._session = self._create()
                except Exception as error:
                    raise SessionNotStarted(str(error)) from error
            return self._session

    def __getattr__(self, name: str) -> Any:
        if name in self.__slots__ or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)  # copy, pickle and other protocol probes: no session for them
        return getattr(self.real(), name)

    def __reduce__(self) -> Any:
        raise TypeError("a deferred Spark session cannot be copied or pickled")

    def __repr__(self) -> str:
        return f"deferred({self._session!r})" if self._session is not None else "deferred(not started)"


def deferred_session(create: Callable[[], SparkSession]) -> SparkSession:
    """A stand-in for ``create()``'s session that calls ``create`` only when first used.

    :param create: makes (or returns) the real session, e.g. a Dagster resource's
        ``spark_session`` property; called at most once.
    """
    return cast(SparkSession, _DeferredSession(create))


_RUN_SESSION: ContextVar[SparkSession | None] = ContextVar("lakehouse_run_session", default=None)


@contextmanager
def running_with(session: SparkSession) -> Iterator[None]:
    """Within the block (a table's run), :func:`run_session` is ``session``."""
    token = _RUN_SESSION.set(session)
    try:
        yield
    finally:
        _RUN_SESSION.reset(token)


def run_session() -> SparkSession | None:
    """The session of the table run in progress (started now if it was deferred): what a
    transform that is handed no DataFrame builds its query on; outside a run, Spark's active
    session (None when there is none)."""
    session = _RUN_SESSION.get()
    if isinstance(session, _DeferredSession):
        return session.real()
    return session if session is not None else SparkSession.getActiveSession()
