"""The one supervisor of every local server: start a process in its own session that dies with
the Python process that started it, wait until it serves, stop its whole process group, and run
a server in the foreground (``make engine``, ``make cluster``, ...).

A server started with :func:`start_process` gets ``SIGTERM`` from the kernel when its starter
goes, even by ``SIGKILL`` (Linux's ``PR_SET_PDEATHSIG``, kept across ``exec``: spark-submit's and
spark-class's ``exec`` of the JVM keep it). The kernel ties it to the *thread* that forked, so
a call from any thread but the main one forks from one long-lived thread of this module.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO

from devstack.ports import serving
from lakehouse_assets.lib.errors import LakehouseError

__all__ = [
    "kill_group",
    "serve_in_foreground",
    "start_process",
    "stop_group",
    "wait_until",
    "wait_until_serving",
]

PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, loaded here (never between fork and exec); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with(starter: int) -> Callable[[], None]:
    """The child's last step before ``exec``: SIGTERM when its parent thread ends; and at once
    when the starter already went between fork and here."""

    def preexec() -> None:
        if _PRCTL is None:
            return
        _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != starter:
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


_spawns: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[bytes]], Future[subprocess.Popen[bytes]]]] = (
    queue.SimpleQueue()
)
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _spawn_forever() -> None:
    while True:
        spawn, future = _spawns.get()
        try:
            future.set_result(spawn())
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            future.set_exception(error)


def _from_a_lasting_thread(spawn: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """Run ``spawn`` in the main thread or in this module's spawner thread, which lives as long
    as the process (a child's death signal follows the thread that forked it)."""
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return spawn()
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_spawn_forever, name="devstack-spawner", daemon=True)
            _spawner.start()
    future: Future[subprocess.Popen[bytes]] = Future()
    _spawns.put((spawn, future))
    return future.result()


def start_process(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    log: IO[bytes] | int | None = None,
) -> subprocess.Popen[bytes]:
    """``command`` in its own session (so :func:`stop_group` reaches everything it starts), its
    output and errors to ``log`` (default: this process's output), and ``SIGTERM`` to it when this
    process ends, however it ends (a no-op where ``prctl`` is unavailable)."""
    starter = os.getpid()
    return _from_a_lasting_thread(
        lambda: subprocess.Popen(
            list(command),
            env=env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with(starter),
        )
    )


def wait_until(
    ready: Callable[[], bool],
    processes: subprocess.Popen[bytes] | Sequence[subprocess.Popen[bytes] | None],
    *,
    timeout: float,
    what: str,
) -> None:
    """Poll ``ready`` until it holds.

    :raises RuntimeError: one of ``processes`` exited first.
    :raises TimeoutError: ``timeout`` seconds passed.
    """
    watched = [processes] if isinstance(processes, subprocess.Popen) else [p for p in processes if p is not None]
    deadline = time.monotonic() + timeout
    while not ready():
        for process in watched:
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited (code {process.returncode}) before it was ready")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} was not ready within {timeout:.0f} s")
        time.sleep(0.2)


def wait_until_serving(
    port: int, process: subprocess.Popen[bytes], *, timeout: float, what: str, host: str = "127.0.0.1"
) -> None:
    """Wait until something accepts connections on ``host:port``.

    :raises RuntimeError: ``process`` exited first (one sentence).
    :raises TimeoutError: ``timeout`` seconds passed.
    """
    deadline = time.monotonic() + timeout
    while not serving(port, host):
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited (code {process.returncode}) before it served on {host}:{port}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not serve on {host}:{port} within {timeout:.0f} s")
        time.sleep(0.2)


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    # The group outlives its leader while any member lives, and its id is not reused meanwhile.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def kill_group(process: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL the process's whole group (a crash: nothing gets to clean up)."""
    if process is None:
        return
    _signal_group(process, signal.SIGKILL)
    process.wait()


def stop_group(process: subprocess.Popen[bytes] | None, timeout: float = 30, *, first: int = signal.SIGTERM) -> None:
    """``first`` (SIGTERM) to the process's group, up to ``timeout`` seconds for the process to
    exit, then SIGKILL to whatever is left of the group."""
    if process is None:
        return
    if process.poll() is None:
        _signal_group(process, first)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
    kill_group(process)


def serve_in_foreground(
    name: str,
    start: Callable[[], object],
    stop: Callable[[], object],
    ready_text: Callable[[], str],
    ready_message: Callable[[], str],
    ready_file: str | None = None,
    *,
    watch: Callable[[], bool] | None = None,
    exit_code: Callable[[], int | None] | None = None,
    restart: bool = True,
) -> int:
    """Start, then write ``ready_text()`` to ``ready_file`` (readable by this user only; it may
    hold credentials) and print ``ready_message()``; stop and delete the file on Ctrl-C or
    SIGTERM. A start that fails is one line on stderr and exit code 1.

    :param name: the prefix of every line printed.
    :param start: starts the server; raises RuntimeError (or TimeoutError, or the framework's
        LakehouseError) with one sentence when it cannot.
    :param stop: stops it (and deletes what it must not leave behind).
    :param ready_text: what ``make dev`` reads from ``ready_file`` once the server serves.
    :param ready_message: the line telling the user how to point runs at the server.
    :param ready_file: where ``ready_text()`` goes (None: nowhere).
    :param watch: whether the server still runs, asked every second (None: not watched).
    :param exit_code: the exit code of a server that stopped, for the line saying so.
    :param restart: a watched server that exited on its own is stopped (what is left of it)
        and started again; False: this returns its exit code instead.
    """
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        start()
        if ready_file:
            path = Path(ready_file)
            path.touch(mode=0o600)
            path.chmod(0o600)
            path.write_text(ready_text())
        print(f"{name}: {ready_message()}", flush=True)
        if watch is None:
            signal.pause()
        while watch is not None:
            time.sleep(1)
            if watch():
                continue
            code = exit_code() if exit_code else None
            exited = f"{name}: the server exited" + (f" (code {code})" if code is not None else "")
            if not restart:
                print(exited, file=sys.stderr, flush=True)
                return 1 if code is None else code
            print(f"{exited}; starting it again", file=sys.stderr, flush=True)
            stop()
            start()
            print(f"{name}: serving again", flush=True)
    except (RuntimeError, TimeoutError, LakehouseError) as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        stop()
        if ready_file:
            Path(ready_file).unlink(missing_ok=True)
    return 0
