"""How much a landed file may cost, and a bounded reader that tells whether it stays within:
the file's size (decompressed, for the archives Spark decompresses by name) and its longest
line, read in fixed chunks, never holding the file or a line whole."""

from __future__ import annotations

import bz2
import gzip
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BufferedIOBase
from typing import IO

CHUNK_BYTES = 1 << 20
# Hadoop's line reader skips (without holding) a line longer than this option, set per reader.
LINE_MAX_OPTION = "mapreduce.input.linerecordreader.line.maxlength"
# Formats read line by line: a line is held whole by the reader, so its length is bounded too.
LINE_FORMATS = ("text", "json", "csv")
# What Spark (Hadoop's codecs) decompresses by the name's ending, and how Python opens the same.
_DECOMPRESSORS: dict[str, Callable[[IO[bytes]], BufferedIOBase]] = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".bz2": lambda raw: bz2.BZ2File(raw, mode="rb"),
}
# Deflate cannot expand data more than about 1032 times: a smaller archive cannot break a bound.
_MAX_EXPANSION = {".gz": 1032, ".bz2": 1 << 20}


@dataclass(frozen=True)
class Limits:
    """What one landed file may cost.

    :param max_file_bytes: its size, decompressed.
    :param max_line_bytes: its longest line (line formats only).
    :param max_columns: the columns its header or fields may bring the schema to.
    :param line_format: whether the input reads the file line by line.
    """

    max_file_bytes: int
    max_line_bytes: int
    max_columns: int
    line_format: bool = True


def size_text(n: int) -> str:
    """``n`` bytes for a message: ``3.0 GiB``, ``512 KiB``, ``12 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


def compression(name: str) -> str | None:
    """The ending Spark decompresses the file by (``.gz``, ``.bz2``), or None."""
    lower = name.lower()
    return next((end for end in _DECOMPRESSORS if lower.endswith(end)), None)


def needs_reading(name: str, size: int, limits: Limits) -> bool:
    """Whether the file's size alone cannot show it within ``limits`` (then it is read)."""
    end = compression(name)
    if end is None:
        return limits.line_format and size > limits.max_line_bytes
    expanded = size * _MAX_EXPANSION[end]
    return expanded > limits.max_file_bytes or (limits.line_format and expanded > limits.max_line_bytes)


def beyond(read: Callable[[int], bytes], limits: Limits) -> str | None:
    """Why the bytes ``read`` returns (chunk by chunk, ``b""`` at the end) break ``limits``, or
    None. Only the current line's length is carried between chunks: a line wholly inside one
    chunk is shorter than the chunk, which is never longer than the line bound."""
    chunk_bytes = max(1, min(CHUNK_BYTES, limits.max_line_bytes))
    total, line = 0, 0
    while chunk := read(chunk_bytes):
        total += len(chunk)
        if total > limits.max_file_bytes:
            return f"it holds more than {size_text(limits.max_file_bytes)} (max_file_bytes)"
        if not limits.line_format:
            continue
        first = chunk.find(b"\n")
        if first < 0:
            line += len(chunk)
        else:
            if line + first > limits.max_line_bytes:
                break
            line = len(chunk) - chunk.rfind(b"\n") - 1
        if line > limits.max_line_bytes:
            break
    else:
        return None
    return f"it holds a line longer than {size_text(limits.max_line_bytes)} (max_line_bytes)"


def vet_stream(name: str, raw: IO[bytes], limits: Limits) -> str | None:
    """Why the landed file ``name`` whose stored bytes ``raw`` reads breaks ``limits`` (or is
    not the archive its name says), or None."""
    end = compression(name)
    if end is None:
        return beyond(raw.read, limits)
    try:
        with _DECOMPRESSORS[end](raw) as stream:
            return beyond(stream.read, limits)
    except (OSError, EOFError, zlib.error, ValueError) as error:
        kind = "gzip" if end == ".gz" else "bzip2"
        return f"it is not a readable {kind} file ({str(error) or type(error).__name__})"
