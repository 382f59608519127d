"""Errors meant for the user, and one-sentence messages from Spark's long ones."""

from __future__ import annotations

import re
from urllib.parse import unquote

from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.spark.engine_auth import token_file

__all__ = ["LakehouseError", "conditions", "engine_lost", "engine_refused", "short_error", "unreadable_file"]


def _with_causes(error: BaseException) -> str:
    """The error's text and its causes' (PySpark keeps the JVM's cause chain in ``_cause``)."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(texts) < 10:
        seen.add(id(current))
        texts.append(str(getattr(current, "_desc", None) or current))
        nested = getattr(current, "_cause", None) or current.__cause__
        current = nested if isinstance(nested, BaseException) else None
    return "\n".join(texts)


def conditions(error: BaseException) -> set[str]:
    """Spark's error conditions (``FAILED_READ_FILE.NO_HINT``, ``INVALID_HANDLE.SESSION_CHANGED``,
    ...) of ``error`` and its causes, with their parent conditions (``INVALID_HANDLE``): what
    PySpark's exceptions carry as ``getCondition()``, classic and Connect alike."""
    found: set[str] = set()
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 10:
        seen.add(id(current))
        condition = getattr(current, "getCondition", None)
        value = condition() if callable(condition) else None
        if isinstance(value, str) and value:
            parts = value.split(".")
            found |= {".".join(parts[: i + 1]) for i in range(len(parts))}
        nested = getattr(current, "_cause", None) or current.__cause__
        current = nested if isinstance(nested, BaseException) else None
    return found


_STATE_MISMATCH = {
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
    "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH",
    "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION",
}


_CSV_HEADER = re.compile(
    r"CSV header does not conform to the schema\.\s*Header: (?P<header>[^\n]*)\n\s*Schema: (?P<schema>[^\n]*)\n"
    r"\s*Expected: (?P<expected>.*?) but found: (?P<found>[^\n]*)"
)


def _detail(text: str) -> str | None:
    """Spark's own words on why a landed file cannot be read, where it gives them."""
    header = _CSV_HEADER.search(text)
    if header:
        return (
            f"its CSV header does not match the declared columns: expected {header['expected']} but found "
            f"{header['found']} (header: {header['header'].strip()}; declared: {header['schema'].strip()})"
        )
    width = re.search(r"Header length: (\d+), schema size: (\d+)", text)
    if width:
        return f"its CSV header has {width[1]} columns but {width[2]} are declared"
    # Spark's CSV parser (univocity) keeps a record's fields in an array of maxColumns slots.
    fields = re.search(r"Index (\d+) out of bounds for length \1\s+at com\.univocity\.parsers", text)
    if fields:
        return f"a CSV record in it holds more than {fields[1]} fields (the CSV option maxColumns)"
    return None


_UNREADABLE = re.compile(r"Encountered error while reading file (\S+?)\.?(\s|$)")


def unreadable_file(error: BaseException) -> str | None:
    """The landed file a failed query could not read (Spark's ``FAILED_READ_FILE``), as landed
    (Spark names it URL-encoded), or None."""
    found = _UNREADABLE.search(_with_causes(error))
    return unquote(found.group(1)) if found else None


def engine_refused(error: BaseException) -> str | None:
    """One sentence when the Spark Connect engine refused this client's token (missing or not
    the engine's); None for any other error."""
    text = _with_causes(error)
    if "UNAUTHENTICATED" not in text and "authentication token" not in text:
        return None
    return (
        f"the Spark engine refused this client ({'no token sent' if 'No authentication' in text else 'wrong token'}): "
        f"clients send the token in {token_file()}, so set LAKEHOUSE_ENGINE_TOKEN_FILE to the file the engine "
        "was started with"
    )


def short_error(error: BaseException) -> str:
    """The useful part of a streaming failure: our own message, else Spark's first lines."""
    refused = engine_refused(error)
    if refused:
        return refused
    text = _with_causes(error)
    # By condition where PySpark carries one; by the text where the JVM's error arrives as text
    # (a query's failure inside foreachBatch, through Py4J).
    if conditions(error) & _STATE_MISMATCH or any(
        m in text for m in (*_STATE_MISMATCH, "StateSchemaNotCompatible", "state schema")
    ):
        return (
            "its stateful query no longer matches the state in its checkpoint (keys, aggregates or "
            "operators changed); run a full refresh of this table (run config "
            "full_refresh: true) to rebuild it from its inputs"
        )
    for marker in ("ExpectationFailed: ", "LakehouseError: "):
        if marker in text:  # (raised in a query's expression, Spark appends its error states)
            return re.sub(r"(\s*SQLSTATE: \w+)+$", "", text.split(marker, 1)[1].splitlines()[0])
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    causes = [ln.removeprefix("Caused by: ") for ln in lines if ln.startswith("Caused by:")]
    unreadable = _UNREADABLE.search(text)
    if unreadable:
        cause = _detail(text) or (causes[-1] if causes else "unreadable")
        return f"cannot read landed file {unquote(unreadable.group(1))} ({cause[:300]})"
    if "Traceback (most recent call last)" in text:
        # A Python error inside a micro-batch: its last exception line says what went wrong.
        raised = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Failed)\b", ln)]
        raised = [ln for ln in raised if not ln.startswith("py4j.protocol.Py4JJavaError")]
        if raised:
            return raised[-1][:1500]
    head = lines[0] if lines else type(error).__name__
    head = re.sub(r"^\[?[A-Z_]+\]?\s*Query \S+ \[id = [^\]]+, runId = [^\]]+\] terminated with exception:\s*", "", head)
    message = head if not causes else f"{head} ({causes[-1]})"
    return message[:1500]


# A restarted engine has a new server-side session id: the client closes its session and every
# later call says so (NO_ACTIVE_SESSION, "create a new Spark Session to reconnect").
_ENGINE_GONE = (
    "UNAVAILABLE",
    "INVALID_HANDLE.SESSION_CHANGED",
    "INVALID_HANDLE.SESSION_NOT_FOUND",
    "INVALID_HANDLE.OPERATION_NOT_FOUND",
    "Connection refused",
    "Socket closed",
    "NO_ACTIVE_SESSION",
    "create a new Spark Session to reconnect",
)


_WORKER_LATE = ("failed to connect back", "PYTHON_WORKER_FAILED_TO_CONNECT", "Accept timed out")
_CONNECTION_RESET = ("Connection reset by peer", "Broken pipe", "RST_STREAM")


def transient_cause(error: BaseException, remote: str) -> str | None:
    """What went wrong, in a few words, when ``error`` is a passing fault of the engine that a
    retry of the table can cure (exactly-once sinks make the retry safe); None for anything
    else: bad data, a failed expectation, a bug."""
    if engine_lost(error, remote):
        return f"the Spark engine at {remote} was unreachable or restarted"
    text = _with_causes(error)
    if "ExpectationFailed" in text:
        return None
    if "PYTHON_WORKER_FAILED_TO_CONNECT" in conditions(error) or any(marker in text for marker in _WORKER_LATE):
        return "the engine's Python worker for the micro-batches did not connect back in time (a busy machine)"
    if any(marker in text for marker in _CONNECTION_RESET):
        return "the connection to the Spark engine was reset"
    return None


def engine_lost(error: BaseException, remote: str) -> str | None:
    """One sentence when ``error`` says the Spark Connect engine at ``remote`` went away (killed,
    restarted, unreachable); None for any other error."""
    status = getattr(error, "getGrpcStatusCode", None)
    code = str(status()) if callable(status) else ""
    text = f"{code} {error}"
    gone = conditions(error) & {"INVALID_HANDLE", "NO_ACTIVE_SESSION"}
    if not remote or not (gone or any(marker in text for marker in _ENGINE_GONE)):
        return None
    return (
        f"the Spark engine at {remote} is unreachable or was lost during the run; start it "
        "(make engine) and run again: each table resumes from its checkpoint and stays exact"
    )
