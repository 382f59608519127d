"""The framework's errors: one root, :class:`LakehouseError`, whose message is one sentence for
the user (what, where, and the fix). Catch the root to catch everything the framework refuses."""

from __future__ import annotations


def first_line(error: BaseException) -> str:
    """An error's first line for a one-sentence message (its type's name when it says nothing)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class LakehouseError(Exception):
    """A failure with a message meant for the user (table name, cause, fix)."""


class ConfigurationError(LakehouseError, ValueError):
    """A setting (an environment variable, ``docs/configuration.md``) whose value cannot be used;
    the message names the variable. Also a ``ValueError``, as it was before it had a name."""


class DeclarationError(LakehouseError):
    """A declaration refused before anything runs: a table, flow, input or pipeline file that
    cannot be built as written. The message names the file and line where it can."""


class RootUnusable(LakehouseError):
    """The data root cannot be used; the message is one sentence for the terminal."""


class ExpectationFailed(LakehouseError):
    """Raised inside a micro-batch when an expectation with action ``fail`` is violated."""


class KafkaProblem(LakehouseError):
    """A Kafka topic cannot be read or written as declared; the message is one sentence with the fix."""


class EngineUnavailable(LakehouseError):
    """The Spark engine went away or could not serve the run for a while (restarted, unreachable,
    a Python worker that did not connect back in time). Transient: the table is retried."""


class LandedFileUnreadable(LakehouseError):
    """A query failed reading one landed file (Spark's ``FAILED_READ_FILE``): ``file`` is its
    path as landed (decoded), so the intake can count the failure against it."""

    def __init__(self, message: str, file: str) -> None:
        super().__init__(message)
        self.file = file


class UnexaminedFile(LakehouseError):
    """A CSV file landed after the run read the headers and before its query listed the folder:
    its micro-batch stopped whole, and the next attempt reads its header first."""
