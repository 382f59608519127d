"""Python imports this at start when this folder is on ``PYTHONPATH`` (crash tests put it there):
with ``TEST_KILL_AT=<table>:<point>`` the process installs a fault hook that SIGKILLs its whole
process group (the Spark JVM dies with it, as in a real crash) when the engine reaches that
fault point (:mod:`lakehouse_assets.lib.engine.faults`); ``<table>:<point>#<n>`` kills it the n-th
time the point is reached (a later micro-batch of the same run)."""

import os

if os.environ.get("TEST_KILL_AT"):
    import signal

    from lakehouse_assets.lib.engine import faults

    _TARGET, _, _NTH = os.environ["TEST_KILL_AT"].partition("#")
    _reached = [0]

    def _kill(table: str, point: str) -> None:
        if f"{table}:{point}" == _TARGET:
            _reached[0] += 1
            if _reached[0] >= int(_NTH or 1):
                os.killpg(os.getpgid(0), signal.SIGKILL)

    faults.install(_kill)
