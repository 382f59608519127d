"""A warm Spark session shared by runs: a small local server that runs tables for Dagster steps.

Every Dagster run is a new process, and a new Spark JVM costs a run some 20 s on two cores (JVM
start plus the first use of each kind of Spark and Delta job). Under ``make dev`` the sensor's
runs instead hand each table to this server, which keeps one SparkSession warm:

    python -m lakehouse_assets.lib.orchestrate.warm_spark --tables my_pipeline.defs --port 15010
    LAKEHOUSE_SPARK_SERVER=http://127.0.0.1:15010 dagster dev ...

The server runs exactly the code a step runs in its own process
(:func:`~lakehouse_assets.lib.execution.table_events`) and streams the events back, so the
tables, checkpoints, metadata and checks are the same either way. It serves one data root and
one version of the code: a step whose code differs (the code was edited) or whose root differs
runs in its own process instead, and the server restarts itself with the new code. Tables run
one at a time; a step whose run is killed leaves its table to finish in the server, and the
table's writer lock keeps any other writer waiting until it has. No server answering: the step
runs in its own process, as ``dagster asset materialize`` always does. Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import dagster as dg

from lakehouse_assets.lib.declare.checks import CheckOutcome
from lakehouse_assets.lib.declare.registry import collect_tables
from lakehouse_assets.lib.engine.errors import LakehouseError
from lakehouse_assets.lib.orchestrate.execution import Checked, Materialized, TableEvent, TableRequest, table_events
from lakehouse_assets.lib.settings import LakehousePaths, current

RESTART = 3  # exit code: the code changed, start again


@cache
def code_fingerprint() -> str:
    """A hash of the package's Python sources: client and server must run the same code."""
    package = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _encode(event: TableEvent) -> dict[str, Any]:
    if isinstance(event, Materialized):
        return {"kind": "materialized", "asset": event.asset, "metadata": dg.serialize_value(event.metadata)}
    return {
        "kind": "checked",
        "check": event.check,
        "passed": event.outcome.passed,
        "metadata": dg.serialize_value(event.outcome.metadata),
    }


def _decode(line: dict[str, Any]) -> TableEvent:
    metadata = dg.deserialize_value(line["metadata"])
    if line["kind"] == "materialized":
        return Materialized(line["asset"], metadata)
    return Checked(line["check"], CheckOutcome(line["passed"], metadata))


# -- client (inside a Dagster step) -------------------------------------------------------------


class ServerUnavailable(Exception):
    """No warm server to use for this step (none answering, other code or another data root)."""


def remote_table_events(
    url: str, paths: LakehousePaths, request: TableRequest, log: Callable[[str], None]
) -> Iterator[TableEvent]:
    """The table's events from the warm server at ``url``; raises :class:`ServerUnavailable`
    before anything ran when the step must run in its own process instead."""
    body = json.dumps({
        "table": request.table, "assets": sorted(request.assets), "checks": sorted(request.checks),
        "full_refresh": request.full_refresh, "previous": dg.serialize_value(request.previous or {}),
        "previous_checks": dg.serialize_value(request.previous_checks or {}), "root": paths.root, "code": code_fingerprint(),
    }).encode()  # fmt: skip
    http = urllib.request.Request(f"{url.rstrip('/')}/run", data=body, headers={"Content-Type": "application/json"})
    try:
        response = urllib.request.urlopen(http, timeout=None)  # noqa: S310 - a local URL from configuration
    except urllib.error.HTTPError as error:
        raise ServerUnavailable(error.read().decode(errors="replace") or str(error)) from None
    except (urllib.error.URLError, ConnectionError) as error:
        raise ServerUnavailable(f"no warm Spark server at {url} ({getattr(error, 'reason', error)})") from None
    finished = False
    with response:
        for raw in response:
            line = json.loads(raw)
            if line["kind"] == "log":
                log(line["message"])
            elif line["kind"] == "error":
                finished = True
                raise LakehouseError(line["message"])
            elif line["kind"] == "done":
                finished = True
            else:
                yield _decode(line)
    if not finished:
        raise LakehouseError(
            f"{request.table}: the warm Spark server at {url} stopped during the run; the table and its "
            "checkpoint are consistent (the run resumes where it stopped): run it again"
        )


# -- server -------------------------------------------------------------------------------------


class WarmSpark:
    """One SparkSession, one table at a time, for one data root and one version of the code."""

    def __init__(self, paths: LakehousePaths, tables_package: str):
        self.paths = paths
        self.tables_package = tables_package
        self.code = code_fingerprint()
        self.ready = threading.Event()
        self.lock = threading.Lock()
        self.error: str | None = None
        self.session = None

    def start_spark(self) -> None:
        try:
            from lakehouse_assets.lib.spark.session import get_spark

            self.session = get_spark()
            self.session.range(1).count()  # JVM, session and the first job's code paths warm
        except Exception as error:  # noqa: BLE001 - every request reports it
            self.error = f"the warm Spark server could not start Spark: {error}"
        finally:
            self.ready.set()

    def refuse(self, body: dict[str, Any]) -> str | None:
        if body.get("code") != self.code:
            return "the warm Spark server runs other code (edited since it started); it restarts with the new code"
        if body.get("root") != self.paths.root:
            return f"the warm Spark server serves the data root {self.paths.root}, not {body.get('root')}"
        return None

    def run(self, body: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
        tables = {t.name: t for t in collect_tables(self.tables_package)}
        table = tables.get(body["table"])
        if table is None:
            send({"kind": "error", "message": f"the warm Spark server knows no table {body['table']!r}"})
            return
        request = TableRequest(
            table=table.name, assets=frozenset(body["assets"]), checks=frozenset(body["checks"]),
            full_refresh=bool(body["full_refresh"]), previous=dg.deserialize_value(body["previous"]),
            previous_checks=dg.deserialize_value(body.get("previous_checks") or "{}"),
        )  # fmt: skip
        self.ready.wait()
        if self.error:
            send({"kind": "error", "message": self.error})
            return
        if not self.lock.acquire(blocking=False):
            send({"kind": "log", "message": f"{table.name}: the warm Spark server is busy with another table; waiting"})
            self.lock.acquire()
        try:
            log = lambda message: send({"kind": "log", "message": message})  # noqa: E731
            log(f"{table.name}: running in the warm Spark server (pid {os.getpid()})")
            for event in table_events(self.session, self.paths, table, request, log):
                send(_encode(event))
        except LakehouseError as error:
            send({"kind": "error", "message": str(error)})
            return
        except Exception as error:  # noqa: BLE001 - reported to the step, the server goes on
            detail = traceback.format_exc(limit=8)
            send({"kind": "error", "message": f"{table.name}: unexpected error in the warm Spark server: {error}\n{detail}"})
            return
        finally:
            self.lock.release()
        send({"kind": "done"})


def _handler(warm: WarmSpark, restart: Callable[[], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the response ends when the connection closes: events stream

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def do_GET(self) -> None:
            body = json.dumps({"ready": warm.ready.is_set(), "code": warm.code, "root": warm.paths.root}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            refused = warm.refuse(body)
            if refused:
                self.send_response(409)
                self.end_headers()
                self.wfile.write(refused.encode())
                if body.get("code") != warm.code:
                    restart()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()

            def send(line: dict[str, Any]) -> None:
                try:
                    self.wfile.write(json.dumps(line).encode() + b"\n")
                    self.wfile.flush()
                except OSError:
                    pass  # the step went away (its run was killed): the table still finishes

            warm.run(body, send)

    return Handler


def serve(port: int, paths: LakehousePaths, tables_package: str) -> int:
    """Bind first (steps that arrive while Spark starts wait for it), then start Spark."""
    warm = WarmSpark(paths, tables_package)
    def restart() -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(warm, restart))
    server.daemon_threads = True
    threading.Thread(target=warm.start_spark, daemon=True).start()
    print(f"warm Spark server on http://127.0.0.1:{port} for {paths.root}", flush=True)
    server.serve_forever()
    return RESTART  # shut down because the code changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", required=True, help="the package declaring the tables, e.g. my_pipeline.defs")
    parser.add_argument("--port", type=int, default=current().spark_port)
    parser.add_argument("--once", action="store_true", help="serve until the code changes, then exit (no restart)")
    args = parser.parse_args(argv)
    if args.once:
        return serve(args.port, LakehousePaths.from_env(), args.tables)
    child: subprocess.Popen | None = None

    def stop(signum: int, _frame: object) -> None:
        if child is not None and child.poll() is None:
            child.terminate()  # its Spark JVM exits with it (the gateway watches its stdin)
            child.wait()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:  # a fresh process per version of the code: nothing stale stays imported
        command = [sys.executable, "-m", __spec__.name, "--tables", args.tables, "--port", str(args.port), "--once"]
        child = subprocess.Popen(command)
        code = child.wait()
        if code != RESTART:
            return code


if __name__ == "__main__":
    sys.exit(main())
