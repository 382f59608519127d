"""Ports on this machine: a free one to serve on, and whether something serves on one (the one
place of both, for every local server and test)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on ``host:port`` (within half a second)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0
