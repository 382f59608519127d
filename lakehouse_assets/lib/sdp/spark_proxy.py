"""The ``spark`` a pipeline's files see, and the plan-only session they are loaded with.

``spark-pipelines`` puts a global ``spark`` into every file it imports; here that global is a
:class:`SessionProxy`: every attribute goes to the session of whatever is running the file's
functions at that moment (a plan-only Spark Connect client while the definitions load, the run's
session, or a micro-batch's session inside ``foreachBatch``). ``spark.conf.get`` answers the
spec's ``configuration`` first, and ``spark.read.table(name)``, ``spark.readStream.table(name)``
and ``spark.table(name)`` answer with the DataFrame the engine read for that dataset (its Delta
table as a stream, a snapshot or a micro-batch's rows): the function runs unchanged on them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from lakehouse_assets.lib.sdp.auto_loader import CLOUD_FILES, KEY_PREFIX, AutoLoaderReader


@dataclass(frozen=True)
class Scope:
    session: Any
    configuration: Mapping[str, str] = field(default_factory=dict)
    frames: Mapping[str, Any] = field(default_factory=dict)


_scope: ContextVar[Scope | None] = ContextVar("lakehouse_sdp_scope", default=None)


class PipelineConf:
    """``spark.conf`` for a pipeline's code: the spec's ``configuration``, then the session's."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._scope.configuration:
            return self._scope.configuration[key]
        if self._scope.session is None:
            return default
        return self._scope.session.conf.get(key, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scope.session.conf, name)


class DatasetReader:
    """``spark.read`` / ``spark.readStream``: ``table(name)`` of a dataset is the engine's frame."""

    def __init__(self, reader: Any, frames: Mapping[str, Any]) -> None:
        self._reader = reader
        self._frames = frames

    def table(self, name: str) -> Any:
        return self._frames[name] if name in self._frames else self._reader.table(name)

    def format(self, source: str) -> Any:
        if source.lower() == CLOUD_FILES and any(k.startswith(KEY_PREFIX) for k in self._frames):
            return AutoLoaderReader(self._frames)
        return self._reader.format(source)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


def _active_scope() -> Scope:
    scope = _scope.get()
    if scope is not None:
        return scope
    return Scope(SparkSession.getActiveSession())


class SessionProxy:
    """The ``spark`` global of a pipeline file (see the module's docstring)."""

    def __getattr__(self, name: str) -> Any:
        scope = _active_scope()
        if name == "conf":
            return PipelineConf(scope)
        if scope.session is None:
            raise RuntimeError("a pipeline function ran outside a run: no Spark session is active")
        if name in ("read", "readStream"):
            return DatasetReader(getattr(scope.session, name), scope.frames)
        if name == "table":
            return DatasetReader(scope.session.read, scope.frames).table
        return getattr(scope.session, name)

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        # Pickled into a Spark Connect foreachBatch worker by reference: the worker's own proxy.
        return (_the_proxy, ())

    def __repr__(self) -> str:
        return "<spark: the running pipeline's session>"


SPARK = SessionProxy()


def configured(key: str) -> str | None:
    """The spec's ``configuration`` value of ``key`` in the current scope (no session asked)."""
    return _active_scope().configuration.get(key)


def _the_proxy() -> SessionProxy:
    return SPARK


@contextmanager
def running_on(
    session: Any, configuration: Mapping[str, str], frames: Mapping[str, Any] | None = None
) -> Iterator[None]:
    """Within the block, the pipeline's ``spark`` is ``session`` and its datasets ``frames``."""
    token = _scope.set(Scope(session, configuration, frames if frames is not None else {}))
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def planning(configuration: Mapping[str, str]) -> Iterator[Any]:
    """A Spark Connect client that is never connected: the pipeline's functions build their
    query plans with it while the definitions load (lineage comes from those plans), with no
    Spark server and no JVM. ``pyspark.sql.functions`` build Connect columns meanwhile."""
    import pyspark.errors.utils as pyspark_errors
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    if pyspark_errors._enable_debugging_cache is None:
        # PySpark asks the active session's conf for this once per process (a server call);
        # the planner has no server: take the setting's default (on).
        pyspark_errors._enable_debugging_cache = True  # type: ignore[assignment]  # typed as None only
    planner = ConnectSession(connection="sc://127.0.0.1:1")
    planner.release_session_on_close = False
    was_remote = "SPARK_CONNECT_MODE_ENABLED" in os.environ
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    previous_active = getattr(ConnectSession._active_session, "session", None)
    ConnectSession._active_session.session = planner
    try:
        with running_on(planner, configuration):
            yield planner
    finally:
        ConnectSession._active_session.session = previous_active
        if not was_remote:
            del os.environ["SPARK_CONNECT_MODE_ENABLED"]
        # Closed, the client makes no clean-up call to its (absent) server at exit.
        planner.client.close()
