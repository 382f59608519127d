"""Warm Python workers for a Spark Connect engine: ``foreachBatch`` handlers forked, not started.

For every streaming query with a ``foreachBatch`` handler, a Connect server starts a new Python
process (``python -m pyspark.sql.connect.streaming.worker.foreach_batch_worker``) that imports
PySpark, pandas and pyarrow before it connects back: ~1.3 s of a warm engine's ~1.6 s for a
small query on 2 cores, paid by every table of every run, and the part that misses the engine's
connect-back deadline on a busy machine. Spark forks its UDF workers from a warm daemon
(``pyspark.daemon``) but never its streaming workers, so the engine's ``PYSPARK_PYTHON`` (what
Spark Connect starts its workers with) is a launcher (:func:`launcher_path`) that hands a streaming worker's start to a warm process
(:func:`serve`) which forks it with those modules already imported. Any other Python the engine
starts (the UDF daemon, plain scripts) runs the real interpreter, unchanged.

The warm process starts with the first worker it could have served (that worker starts the cold
way), lives in the engine's process group, ends when the engine does, and steps aside (the
launcher then starts workers the cold way and a fresh warm process) when a framework module it
imported changed on disk. ``LAKEHOUSE_WARM_WORKERS=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import runpy
import signal
import socket
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterable
from pathlib import Path

from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import user_cache

STREAMING_WORKERS = (
    "pyspark.sql.connect.streaming.worker.foreach_batch_worker",
    "pyspark.sql.connect.streaming.worker.listener_worker",
)
# What every streaming worker imports before it serves; imported once by the warm process.
PRELOAD = (
    "pyspark.sql.connect.session",
    "pyspark.worker",
    "pyspark.sql.connect.streaming.worker.foreach_batch_worker",
    "lakehouse_assets.lib.engine.writing.batch",
    "lakehouse_assets.lib.engine.writing.recompute",
    "lakehouse_assets.lib.sdp.transform",
)

_LAUNCHER = """#!{python} -S
# Written by lakehouse_assets.lib.accel.warm_workers: the engine's PYSPARK_PYTHON.
import json, os, socket, subprocess, sys
PYTHON, MODULES, SOCKETS = {python!r}, {modules!r}, {sockets!r}
args = sys.argv[1:]
if len(args) == 2 and args[0] == "-m" and args[1] in MODULES and os.environ.get("LAKEHOUSE_WARM_WORKERS") != "0":
    engine = os.getppid()
    path = os.path.join(SOCKETS, f"engine-{{engine}}.sock")
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        request = json.dumps({{"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
        socket.send_fds(conn, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
        status = conn.recv(8)
    except OSError:
        status = None
    if status:
        sys.exit(int.from_bytes(status, "big", signed=True))
    # No warm process for this engine yet, or it stepped aside: start one beside this worker.
    subprocess.Popen([PYTHON, "-m", "lakehouse_assets.lib.accel.warm_workers", path, str(engine)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.execv(PYTHON, [PYTHON, *args])
"""


def sockets_dir() -> Path:
    """The warm processes' sockets: short paths (a Unix socket's is at most 107 bytes), this user's only."""
    folder = Path(tempfile.gettempdir()) / f"lakehouse-warm-workers-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o077:
        raise LakehouseError(
            f"{folder} belongs to another user or is open to others; remove it and start the engine again"
        )
    return folder


def launcher_path() -> str:
    """The launcher for this interpreter, the engine's ``PYSPARK_PYTHON``: written once into the
    per-user cache (not the temporary folder, which cleaners may empty under a running engine)."""
    text = _LAUNCHER.format(python=sys.executable, modules=STREAMING_WORKERS, sockets=str(sockets_dir()))
    folder = user_cache() / "warm-workers"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"python-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}")
        partial.write_text(text)
        partial.chmod(0o700)
        partial.replace(path)
    return str(path)


def source_mtimes(paths: Iterable[str]) -> dict[str, int]:
    """The modification times of those of ``paths`` that exist: a snapshot for
    :func:`sources_changed` (a warm process steps aside when its sources change)."""
    found: dict[str, int] = {}
    for path in paths:
        with contextlib.suppress(OSError):
            found[path] = os.stat(path).st_mtime_ns
    return found


def sources_changed(snapshot: dict[str, int]) -> bool:
    """Whether a file of the snapshot changed or went away since it was taken."""
    try:
        return any(os.stat(path).st_mtime_ns != mtime for path, mtime in snapshot.items())
    except OSError:
        return True


def _framework_files() -> dict[str, int]:
    """The framework's modules this process imported (under ``lakehouse_assets/lib``, wherever
    the package is: a checkout, or site-packages where a new wheel replaces them)."""
    framework = str(Path(__file__).resolve().parents[1]) + os.sep
    files = [os.path.realpath(getattr(m, "__file__", None) or "") for m in list(sys.modules.values())]
    return source_mtimes(f for f in files if f.startswith(framework))


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    size, data = int.from_bytes(data[:8], "big"), data[8:]
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise ConnectionError("the launcher left")
        data += more
    return json.loads(data), fds


def _run_worker(conn: socket.socket, request: dict, fds: list[int], held: list[int]) -> None:
    """In the forked child: become the worker the launcher was asked for, then report its status."""
    for fd in held:  # the warm process's listener and lock are not the worker's
        os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])

    def launcher_gone() -> None:  # the engine stopped the worker: its launcher is gone
        conn.recv(1)
        os._exit(1)

    threading.Thread(target=launcher_gone, daemon=True).start()
    status = 1
    try:
        sys.argv = [request["argv"][1]]
        runpy.run_module(request["argv"][1], run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except Exception:  # noqa: BLE001 - reported as Python would, with the exit status
        traceback.print_exc()
    finally:  # never back into the warm process's loop
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(int(status).to_bytes(8, "big", signed=True))
        finally:
            os._exit(status)


def serve(path: str, engine_pid: int) -> None:
    """Fork a streaming worker for each launcher that connects, until the engine is gone or a
    framework module changed on disk."""
    lock = open(f"{path}.lock", "w")  # noqa: SIM115 (held for the process's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another launcher of this engine started one first
    for module in PRELOAD:
        __import__(module)
    files = _framework_files()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial = f"{path}.{os.getpid()}"
    listener.bind(partial)
    os.replace(partial, path)
    bound = os.stat(path).st_ino
    listener.listen(16)
    listener.settimeout(1.0)
    try:
        while os.getppid() == engine_pid or _alive(engine_pid):
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            if sources_changed(files):
                # Free the socket and the lock first: the launcher, told by the closed connection,
                # starts this worker cold and a successor that takes both at once.
                _unlink_own(path, bound)
                fcntl.flock(lock, fcntl.LOCK_UN)
                conn.close()
                return
            conn.settimeout(None)
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError):  # a launcher that left mid-request starts its worker cold
                conn.close()
                continue
            if os.fork() == 0:
                _run_worker(conn, request, fds, [listener.fileno(), lock.fileno()])
            for fd in fds:
                os.close(fd)
            conn.close()
    finally:
        _unlink_own(path, bound)
        listener.close()


def _unlink_own(path: str, bound: int) -> None:
    """Remove the socket at ``path`` while it is still the one this process bound, not a successor's."""
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == bound:
            os.unlink(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
