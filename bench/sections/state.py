"""Section 6: peak memory and state store size. Its runs belong to the history process's
preparation (``bench.sections.history``); this turns them into the section's figures."""

from __future__ import annotations

from bench.common import STATEFUL


def state_series(runs: list[dict]) -> list[dict]:
    """Section 6's figures from its runs: state store size and rows after each."""
    return [
        {"run": i + 1, "success": r["success"], "wall_s": r["wall_s"], "state_bytes": r["state_bytes"],
         "state_rows": {t: r["metadata"].get(t, {}).get("state_rows") for t in STATEFUL}}
        for i, r in enumerate(runs)
    ]  # fmt: skip
