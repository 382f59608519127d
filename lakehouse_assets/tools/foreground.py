"""Running a local server in the foreground (``make postgres``, ``make s3``, ``make cluster``):
start it, hand its address to ``make dev`` through a file, wait for Ctrl-C or SIGTERM, stop it."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path


def serve_in_foreground(
    name: str,
    start: Callable[[], object],
    stop: Callable[[], object],
    ready_text: Callable[[], str],
    ready_message: Callable[[], str],
    ready_file: str | None = None,
) -> int:
    """Start, then write ``ready_text()`` to ``ready_file`` (readable by this user only; it may
    hold credentials) and print ``ready_message()``; stop and delete the file on Ctrl-C or
    SIGTERM. A start that fails is one line on stderr and exit code 1.

    :param name: the prefix of every line printed.
    :param start: starts the server; raises RuntimeError with one sentence when it cannot.
    :param stop: stops it (and deletes what it must not leave behind).
    :param ready_text: what ``make dev`` reads from ``ready_file`` once the server serves.
    :param ready_message: the line telling the user how to point runs at the server.
    :param ready_file: where ``ready_text()`` goes (None: nowhere).
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
        signal.pause()
    except RuntimeError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        stop()
        if ready_file:
            Path(ready_file).unlink(missing_ok=True)
    return 0
