"""The import path of a Python process the framework starts with this interpreter: the class
archive's training run, a Spark Connect engine and its Python workers.

The child must import ``lakehouse_assets`` and the pipeline's own modules from where this process
did: a checkout's root (``make`` and pytest put it on the path), a Dagster project's folder (the
``dagster`` command puts its working directory first), or an installed wheel. Nothing here is
derived from where the package lives.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def _installation() -> tuple[str, ...]:
    """The folders of this interpreter's own installation, virtualenv included."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(os.path.realpath(p) + os.sep for p in prefixes)


def child_python_path(environ: Mapping[str, str] | None = None) -> str:
    """``PYTHONPATH`` for a child that runs this interpreter (``sys.executable``): the entries of
    this process's ``sys.path`` the interpreter does not give every process by itself, absolute
    (``''`` is this process's working directory), in this process's order, then the
    ``PYTHONPATH`` of ``environ`` (default ``os.environ``) for whatever was not imported yet.

    Left out: the standard library and site-packages, under the interpreter's prefixes. The
    child gets them from its own start-up, with the ``.pth`` files that only start-up applies
    (an editable install's finder); named on ``PYTHONPATH`` they would come before the
    installation's own order. A wheel installed into site-packages is found that way, so
    nothing is added for it; a checkout or a project folder on the path is passed on.

    :param environ: the child's environment before this (its ``PYTHONPATH`` is kept, last).
    """
    environ = os.environ if environ is None else environ
    installed = _installation()
    entries: list[str] = []
    for entry in sys.path:
        path = os.path.realpath(entry or os.getcwd())
        if (path + os.sep).startswith(installed) or not os.path.exists(path):
            continue
        entries.append(path)
    entries += [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(entries))
