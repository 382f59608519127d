"""Fault points: named instants of a run where crash tests kill the process.

The engine calls :func:`reached` at the dangerous moments (after a Delta commit and before the
checkpoint records it; between the two writes of one micro-batch). Nothing happens unless a
hook was installed with :func:`install`: the tests do that in the processes they kill.
"""

from __future__ import annotations

from collections.abc import Callable

Hook = Callable[[str, str], None]
_hook: Hook | None = None


def install(hook: Hook | None) -> None:
    """Call ``hook(table, point)`` at every fault point from now on (None removes it)."""
    global _hook
    _hook = hook


def reached(table: str, point: str) -> None:
    if _hook is not None:
        _hook(table, point)


def installed() -> bool:
    """A hook is installed: the engine keeps to the paths that reach every fault point."""
    return _hook is not None
