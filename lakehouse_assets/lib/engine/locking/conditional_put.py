"""S3's conditional write, ``PutObject`` with ``If-None-Match: *``: the object is created only if
no object has that key, atomically on the server (S3 since 2024, MinIO, R2, GCS's XML API, and
S3Proxy's filesystem backend through link(2)). The table lease is built on it.

``pyarrow.fs`` (which every other object operation here uses) cannot send the header, and the
AWS SDKs are not dependencies, so the request is signed here with AWS Signature Version 4 from
the configured key pair (standard library only).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import re
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import Settings

TIMEOUT_S = 30.0


class ConditionalWritesUnsupported(LakehouseError):
    """The object store refuses or ignores ``If-None-Match``; the message is one sentence."""


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _endpoint(settings: Settings, bucket: str) -> tuple[str, str, str]:
    """(scheme, host[:port], path prefix) of ``bucket``: path-style on a configured endpoint (as
    Spark's s3a settings), AWS's virtual-hosted name otherwise."""
    if settings.s3_endpoint:
        parts = urlsplit(settings.s3_endpoint if "://" in settings.s3_endpoint else f"https://{settings.s3_endpoint}")
        return parts.scheme, parts.netloc, f"/{bucket}"
    return "https", f"{bucket}.s3.{settings.s3_region}.amazonaws.com", ""


def signed_headers(
    settings: Settings, method: str, host: str, path: str, body: bytes, extra: dict[str, str], now: datetime
) -> dict[str, str]:
    """The request's headers with its SigV4 ``Authorization`` (service ``s3``, unsigned query).

    :param settings: the key pair, session token and region.
    :param method: the HTTP method.
    :param host: the ``Host`` header as sent (with the port, if any).
    :param path: the request's path, already percent-encoded.
    :param body: the payload (hashed into the signature).
    :param extra: further headers to send and sign (``If-None-Match``).
    :param now: the signing time (UTC).
    """
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = {"host": host, "x-amz-date": stamp, "x-amz-content-sha256": hashlib.sha256(body).hexdigest()}
    if settings.s3_session_token:
        headers["x-amz-security-token"] = settings.s3_session_token
    headers |= {name.lower(): value for name, value in extra.items()}
    names = sorted(headers)
    signed = ";".join(names)
    canonical_headers = "".join(f"{n}:{headers[n].strip()}\n" for n in names)
    canonical = "\n".join([method, path, "", canonical_headers, signed, headers["x-amz-content-sha256"]])
    scope = f"{day}/{settings.s3_region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{settings.s3_secret_key}".encode()
    for part in (day, settings.s3_region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={settings.s3_access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
    )
    return headers


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
    scheme, host, prefix = _endpoint(settings, bucket)
    path = f"{prefix}/{quote(key, safe='/-_.~')}"
    headers = signed_headers(settings, "PUT", host, path, body, {"If-None-Match": "*"}, datetime.now(UTC))
    connection_type = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    connection = connection_type(host, timeout=TIMEOUT_S)
    try:
        connection.request("PUT", path, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()[:300].decode("utf-8", errors="replace")
    except http.client.HTTPException as error:  # a malformed or cut answer: as unreachable
        raise OSError(f"PUT s3://{bucket}/{key} got no valid answer ({error!r})") from None
    finally:
        connection.close()
    if response.status == 200:
        return True
    if response.status in (409, 412):
        return False
    if response.status == 501:
        raise ConditionalWritesUnsupported(
            f"s3://{bucket} does not support conditional writes (If-None-Match), on which the table lease "
            "relies; set LAKEHOUSE_TABLE_LEASE=0 to keep writers apart with Dagster's pools only."
        )
    code = re.search(r"<Code>([^<]+)</Code>", answer)
    if 400 <= response.status < 500:  # refused (credentials, permissions): asking again will not help
        raise LakehouseError(
            f"s3://{bucket} refused the table lease's conditional write of {key} "
            f"({response.status} {code.group(1) if code else answer[:80]})."
        )
    raise OSError(f"PUT s3://{bucket}/{key} (If-None-Match) answered {response.status}: {answer}")
