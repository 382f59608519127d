"""What ``ps`` shows every user (the command line of every process on the machine), and commands
run with a bound on their time that holds for what they start too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple


class Process(NamedTuple):
    parent: int
    command: str  # its arguments joined by spaces


def processes() -> dict[int, Process]:
    """pid -> parent and command line of every process readable in /proc that has one (a kernel
    thread has none, nor has a process that exited and is not yet reaped)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if command:
                found[int(entry.name)] = Process(parent, command)
    return found


@contextmanager
def processes_seen(every_s: float = 0.2) -> Iterator[dict[int, set[Process]]]:
    """Every process seen while the block runs, sampled every ``every_s`` seconds and once more
    at its end: pid -> each (parent, command line) it had (a process that executes another
    program, or whose parent dies, has several); filled in place."""
    seen: dict[int, set[Process]] = {}
    done = threading.Event()

    def sample() -> None:
        for pid, process in processes().items():
            seen.setdefault(pid, set()).add(process)

    def watch() -> None:
        while not done.is_set():
            sample()
            done.wait(every_s)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join()
        sample()


def holding(seen: dict[int, set[Process]], secrets: list[str]) -> list[str]:
    """The command lines among ``seen`` that contain any of ``secrets`` (none may be empty)."""
    assert all(secrets), "an empty secret would match every command line"
    return sorted(
        f"{pid}: {p.command[:300]}"
        for pid, known in seen.items()
        for p in known
        if any(s in p.command for s in secrets)
    )


def run_bounded(command: list[str], *, timeout: float, **options: object) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(..., capture_output=True, text=True)`` that ends within ``timeout``: the
    command runs in a session of its own and on timeout the whole session is killed, so a JVM
    it started cannot hold the output pipes open (``subprocess.run`` would then wait forever)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, **options) as proc:  # type: ignore[call-overload]  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=30)
            raise AssertionError(f"{command[:4]} did not end within {timeout:.0f}s:\n{(out + err)[-3000:]}") from None
    return subprocess.CompletedProcess(command, proc.returncode, out, err)
