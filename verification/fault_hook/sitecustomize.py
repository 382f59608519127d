"""Python imports this at start when this folder is on ``PYTHONPATH`` (crash tests put it there):
with ``TEST_KILL_AT=<table>:<point>`` the process installs a fault hook that SIGKILLs its whole
process group (the Spark JVM dies with it, as in a real crash) when the engine reaches that
fault point (:mod:`lakehouse_assets.lib.engine.faults`)."""

import os

if os.environ.get("TEST_KILL_AT"):
    import signal

    from lakehouse_assets.lib.engine import faults

    _TARGET = os.environ["TEST_KILL_AT"]

    def _kill(table: str, point: str) -> None:
        if f"{table}:{point}" == _TARGET:
            os.killpg(os.getpgid(0), signal.SIGKILL)

    faults.install(_kill)
