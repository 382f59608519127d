"""What ``ps`` shows every user: the command line of every process on the machine."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def command_lines() -> dict[int, str]:
    """pid -> command line (arguments joined by spaces) of every process readable in /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return found


@contextmanager
def command_lines_seen(every_s: float = 0.2) -> Iterator[dict[int, str]]:
    """Every (pid, command line) seen while the block runs, sampled every ``every_s`` seconds and
    once more at its end; filled in place."""
    seen: dict[int, str] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(command_lines())
            done.wait(every_s)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join()
        seen.update(command_lines())


def holding(lines: dict[int, str], secrets: list[str]) -> list[str]:
    """The command lines among ``lines`` that contain any of ``secrets`` (none may be empty)."""
    assert all(secrets), "an empty secret would match every command line"
    return [f"{pid}: {line[:300]}" for pid, line in sorted(lines.items()) if any(s in line for s in secrets)]
