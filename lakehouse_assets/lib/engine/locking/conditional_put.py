"""S3's conditional write, ``PutObject`` with ``If-None-Match: *``: the object is created only if
no object has that key, atomically on the server (S3 since 2024, MinIO, R2, GCS's XML API, and
S3Proxy's filesystem backend through link(2)). The table lease is built on it.

``pyarrow.fs`` (which every other object operation here uses) cannot send the header, and the
AWS SDKs are not dependencies, so the request is signed by :mod:`lakehouse_assets.lib.engine.state.s3_api`.
"""

from __future__ import annotations

import re

from lakehouse_assets.lib.engine.state.s3_api import send
from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import Settings


class ConditionalWritesUnsupported(LakehouseError):
    """The object store refuses or ignores ``If-None-Match``; the message is one sentence."""


def put_if_absent(settings: Settings, bucket: str, key: str, body: bytes) -> bool:
    """Create the object ``key`` in ``bucket`` unless one exists: True when this call created it,
    False when an object was there (412) or another conditional write of it was under way (409).

    :param settings: the endpoint, region and credentials.
    :param bucket: the bucket.
    :param key: the object's key (no leading ``/``).
    :param body: the object's content.
    :raises ConditionalWritesUnsupported: the store answered 501 Not Implemented.
    :raises LakehouseError: the store refused the request (4xx: credentials, permissions).
    :raises OSError: the store could not be reached, or failed (5xx): worth asking again.
    """
    if not (settings.s3_access_key and settings.s3_secret_key):
        raise ConditionalWritesUnsupported(
            "the table lease signs its conditional writes with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "which are not set (the AWS SDK's default chain is not read here); set them, or set "
            "LAKEHOUSE_TABLE_LEASE=0 to keep writers apart with Dagster's pools only."
        )
    status, body_back = send(settings, "PUT", bucket, key, body=body, extra={"If-None-Match": "*"})
    answer = body_back[:300].decode("utf-8", errors="replace")
    if status == 200:
        return True
    if status in (409, 412):
        return False
    if status == 501:
        raise ConditionalWritesUnsupported(
            f"s3://{bucket} does not support conditional writes (If-None-Match), on which the table lease "
            "relies; set LAKEHOUSE_TABLE_LEASE=0 to keep writers apart with Dagster's pools only."
        )
    code = re.search(r"<Code>([^<]+)</Code>", answer)
    if 400 <= status < 500:  # refused (credentials, permissions): asking again will not help
        raise LakehouseError(
            f"s3://{bucket} refused the table lease's conditional write of {key} "
            f"({status} {code.group(1) if code else answer[:80]})."
        )
    raise OSError(f"PUT s3://{bucket}/{key} (If-None-Match) answered {status}: {answer}")
