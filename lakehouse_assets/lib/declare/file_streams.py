"""Folders a table's own function streams through Spark's file source.

An SDP flow may read a folder itself, ``spark.readStream.format("json").schema(s).load(path)``:
the engine leaves that read to the function (it is Spark's file source, exactly as
``spark-pipelines`` runs it) but knows the folder, so a run can tell that the query would find
nothing new there and not start it (:mod:`lakehouse_assets.lib.engine.reading.idle_folder`).
The run first asks the table's transform which folders its code streams now
(``streamed_folders()``); a transform that cannot say, or names others, runs its query.
"""

from __future__ import annotations

from dataclasses import dataclass

# Reader options that change which files Spark's file source takes: a run with any of them
# always starts its query.
DISCOVERY_OPTIONS = frozenset(
    {
        "basepath",
        "cleansource",
        "filenameonly",
        "latestfirst",
        "maxfileage",
        "modifiedafter",
        "modifiedbefore",
        "pathglobfilter",
        "recursivefilelookup",
        "sourcearchivedir",
    }
)


@dataclass(frozen=True)
class FileStream:
    """A folder the table's function streams itself with Spark's file source.

    :param path: the path the function loads (a folder, any scheme Spark reads); empty for a
        stream of no path (Kafka, rate), which the run cannot see, so the flow always runs.
    :param options: the reader options it gives, as ``(key, value)`` pairs.
    """

    path: str
    options: tuple[tuple[str, str], ...] = ()

    @property
    def takes_every_file(self) -> bool:
        """Whether Spark takes every visible file directly in the folder: the path is no glob and
        no option narrows, widens or reorders what the source lists."""
        plain_path = bool(self.path) and not any(c in self.path for c in "{}[]*?\\")  # Hadoop's isGlobPath
        return plain_path and not any(key.lower() in DISCOVERY_OPTIONS for key, _ in self.options)
