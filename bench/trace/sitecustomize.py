"""Python imports this at start when ``bench/trace`` is on ``PYTHONPATH``: with
``LAKEHOUSE_BENCH_TRACE=<file>`` a real ``dagster asset materialize`` process records the
framework's timings into that file (see ``bench/instrument.py``). Otherwise it does nothing."""

import os
import time

_STARTED = time.time()

if os.environ.get("LAKEHOUSE_BENCH_TRACE"):
    from bench.instrument import install_for_cli

    install_for_cli(os.environ["LAKEHOUSE_BENCH_TRACE"], _STARTED)
