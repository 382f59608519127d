"""Credentials a Spark driver starts with, kept off every command line.

Every driver here starts as ``spark-submit``: PySpark's embedded session runs
``spark-submit --conf key=value ...`` and the Connect engine is one too, and a command line is
readable by every user of the machine (``ps``, ``/proc/<pid>/cmdline``). So settings that hold
credentials never go there:

- a local driver (``local``, ``local[N]``) has no other JVM to hand them to: S3A reads
  ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` from its environment (its default chain);
- a driver with executors in other JVMs (``local-cluster[...]``, ``spark://``) gets them in a
  properties file only this user can read (``--properties-file``; ``--load-spark-defaults``
  keeps ``spark-defaults.conf``), deleted once the driver has started. They are then in its
  SparkConf, which executors fetch over Spark's RPC when they register.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.object_store import s3a_secrets

# PySpark appends these words to the spark-submit command of an embedded driver.
SUBMIT_ARGS = "PYSPARK_SUBMIT_ARGS"


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs everything in the driver's JVM (``local``, ``local[N]``, ``local[*]``).

    :param master: a Spark master URL.
    """
    return master == "local" or master.startswith("local[")


def launch_secrets(master: str) -> dict[str, str]:
    """The Spark settings holding credentials that a driver on ``master`` must start with
    (none for a local master: it reads them from its environment).

    :param master: the driver's Spark master.
    """
    return {} if is_local_master(master) else s3a_secrets(current())


def _escaped(text: str) -> str:
    """``text`` as ``java.util.Properties`` reads it back: separators, comments and backslashes
    escaped, anything beyond ASCII as ``\\uXXXX``."""
    out = []
    for char in text:
        if char in "\\=:#! ":
            out.append("\\" + char)
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif not " " <= char <= "~":
            units = char.encode("utf-16-be")  # Java's chars: one unit, or a surrogate pair
            out += [f"\\u{units[i : i + 2].hex()}" for i in range(0, len(units), 2)]
        else:
            out.append(char)
    return "".join(out)


def write_private_properties(path: Path, values: Mapping[str, str]) -> None:
    """Write ``values`` as a Java properties file that only this user can read (created with
    mode 0600, never over an existing file).

    :param path: the new file.
    :param values: the settings.
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.writelines(f"{_escaped(key)}={_escaped(value)}\n" for key, value in values.items())


def properties_arguments(path: Path) -> list[str]:
    """``spark-submit``'s arguments that read settings from ``path`` and still load
    ``spark-defaults.conf``.

    :param path: a properties file.
    """
    return ["--properties-file", str(path), "--load-spark-defaults"]


@contextmanager
def embedded_driver_secrets(master: str) -> Iterator[None]:
    """While the block starts an embedded driver on ``master`` (``getOrCreate()``), PySpark's
    ``spark-submit`` reads its credentials from a private properties file named in
    ``PYSPARK_SUBMIT_ARGS``; the file is deleted and the variable restored after.

    :param master: the driver's Spark master.
    """
    secret = launch_secrets(master)
    if not secret:
        yield
        return
    before = os.environ.get(SUBMIT_ARGS)
    with tempfile.TemporaryDirectory(prefix="lakehouse-driver-") as private:  # mode 0700
        properties = Path(private) / "secrets.properties"
        write_private_properties(properties, secret)
        rest = shlex.split(before) if before else ["pyspark-shell"]
        os.environ[SUBMIT_ARGS] = shlex.join([*properties_arguments(properties), *rest])
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(SUBMIT_ARGS, None)
            else:
                os.environ[SUBMIT_ARGS] = before
