"""Variables set for a while: settings are read per call, so the servers and runs started inside
the block see them (tests and benchmarks that point everything at a local stack)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set while the block runs, restored after."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
