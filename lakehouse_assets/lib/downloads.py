"""Downloads checked against SHA-256s committed in this repository.

Setup fetches jars from Maven Central (Delta's, Kafka's and S3's for Spark, the local Kafka
broker's, S3Proxy). A checksum served next to a file by the same server proves nothing if that
server, a mirror or a proxy is not what it should be, so each file's SHA-256 is pinned here, in
the repository, and a file that differs, or that nothing pins, stops setup with one sentence
naming it. A folder that passed keeps a ``SHA256SUMS`` stamp of what was checked, so later
setups check it again only when the pins change.

To refresh the pins after changing a version: delete the cache folder, run the download once
with the check off (``LAKEHOUSE_PIN_REFRESH=1 make setup``), then print the new pins with
``python -m lakehouse_assets.lib.downloads <folder>`` and paste them into the pin table
(``lib/spark/jar_checksums.py``, ``devstack/download_checksums.py``).
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import current

STAMP = "SHA256SUMS"


class ChecksumMismatch(LakehouseError):
    """A downloaded file is not the one whose SHA-256 the repository pins; one sentence naming it."""


def sha256_of(path: Path) -> str:
    """The SHA-256 of the file at ``path``, in hex.

    :param path: a file.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while chunk := data.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _refreshing() -> bool:
    return current().pin_refresh


def check_file(path: Path, pinned: str, what: str, pins: str, name: str | None = None) -> None:
    """Refuse ``path`` unless its SHA-256 is ``pinned``.

    :param path: the downloaded file.
    :param pinned: its SHA-256 as committed.
    :param what: what the file is, for the message (``"S3Proxy"``).
    :param pins: where the pin is committed, for the message.
    :param name: the artifact's name in the message (default: the file's).
    :raises ChecksumMismatch: it differs.
    """
    if _refreshing():
        return
    actual = sha256_of(path)
    if actual != pinned:
        raise ChecksumMismatch(
            f"Setup stopped: {name or path.name} ({what}) has SHA-256 {actual}, not the {pinned} committed in {pins}, "
            "so it was not used: the download or the cache was altered (delete the file and run make setup "
            "again), or the version changed without its pin."
        )


def _stamp_text(pinned: Mapping[str, str]) -> str:
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(pinned.items()))


def check_folder(folder: Path, pinned: Mapping[str, str], what: str, pins: str, pattern: str = "*.jar") -> None:
    """Refuse ``folder`` unless its files matching ``pattern`` are exactly the pinned ones, each
    with its SHA-256; then stamp it, so the next check of the same pins costs one read.

    :param folder: the downloaded files.
    :param pinned: file name -> SHA-256, as committed.
    :param what: what the files are, for the message.
    :param pins: where the pins are committed, for the message.
    :param pattern: which files of the folder are checked.
    :raises ChecksumMismatch: a file differs, is not pinned, or a pinned file is missing.
    """
    stamp = folder / STAMP
    if _refreshing() or (stamp.exists() and stamp.read_text() == _stamp_text(pinned)):
        return
    present = {path.name: path for path in folder.glob(pattern)}
    unpinned = sorted(set(present) - set(pinned))
    if unpinned:
        raise ChecksumMismatch(
            f"Setup stopped: {unpinned[0]} ({what}) was downloaded but no SHA-256 for it is committed in {pins}, "
            "so it was not used: pin it there if the dependency change is intended."
        )
    missing = sorted(set(pinned) - set(present))
    if missing:
        raise ChecksumMismatch(
            f"Setup stopped: {missing[0]} ({what}) is pinned in {pins} but was not downloaded: "
            "the resolved versions differ from the pinned ones."
        )
    for name, path in sorted(present.items()):
        check_file(path, pinned[name], what, pins)
    stamp.write_text(_stamp_text(pinned))


def download(url: str, target: Path, pinned: str, what: str, pins: str) -> Path:
    """Download ``url`` to ``target`` (through a partial file, renamed only once its SHA-256 is
    the pinned one).

    :param url: where from.
    :param target: where to.
    :param pinned: its SHA-256 as committed.
    :param what: what the file is, for the message.
    :param pins: where the pin is committed, for the message.
    :raises ChecksumMismatch: it differs (nothing is left at ``target``).
    :raises OSError: the download failed.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
        check_file(partial, pinned, what, pins, name=target.name)
        partial.rename(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def pin_lines(files: Iterable[Path]) -> str:
    """``"name": "sha256",`` lines of ``files``, for a pin table.

    :param files: the files to pin.
    """
    return "".join(f'    "{path.name}": "{sha256_of(path)}",\n' for path in sorted(files))


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        place = Path(argument)
        sys.stdout.write(pin_lines(place.glob("*.jar") if place.is_dir() else [place]))
