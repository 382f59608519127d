"""The two S3 requests ``pyarrow.fs`` cannot make, signed here: ``PutObject`` with
``If-None-Match: *`` (the table lease) and ``ListObjectsV2`` with ``start-after`` (a landing
sensor's tick that lists only the names after its mark). The AWS SDKs are not dependencies, so a
request is signed with AWS Signature Version 4 from the configured key pair (standard library
only), path-style on a configured endpoint as Spark's s3a settings are.
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import http.client
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit
from xml.etree import ElementTree

from lakehouse_assets.lib.settings import Settings

TIMEOUT_S = 30.0
# A listing's requests each answer within LIST_TIMEOUT_S, all within LIST_DEADLINE_S, and a
# listing asks at most LIST_MAX_PAGES pages (more is a backlog a whole listing serves as well).
LIST_TIMEOUT_S = 5.0
LIST_DEADLINE_S = 10.0
LIST_MAX_PAGES = 20


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def endpoint(settings: Settings, bucket: str) -> tuple[str, str, str]:
    """(scheme, host[:port], path prefix) of ``bucket``: path-style on a configured endpoint (as
    Spark's s3a settings), AWS's virtual-hosted name otherwise."""
    if settings.s3_endpoint:
        parts = urlsplit(settings.s3_endpoint if "://" in settings.s3_endpoint else f"https://{settings.s3_endpoint}")
        return parts.scheme, parts.netloc, f"/{bucket}"
    return "https", f"{bucket}.s3.{settings.s3_region}.amazonaws.com", ""


def canonical_query(query: dict[str, str]) -> str:
    """``query`` as SigV4 signs it (and as it is sent): names sorted, both sides percent-encoded."""
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query.items()))


def signed_headers(
    settings: Settings,
    method: str,
    host: str,
    path: str,
    body: bytes,
    extra: dict[str, str],
    now: datetime,
    query: str = "",
) -> dict[str, str]:
    """The request's headers with its SigV4 ``Authorization`` (service ``s3``).

    :param settings: the key pair, session token and region.
    :param method: the HTTP method.
    :param host: the ``Host`` header as sent (with the port, if any).
    :param path: the request's path, already percent-encoded.
    :param body: the payload (hashed into the signature).
    :param extra: further headers to send and sign (``If-None-Match``).
    :param now: the signing time (UTC).
    :param query: the query string as sent, in :func:`canonical_query`'s form.
    """
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = {"host": host, "x-amz-date": stamp, "x-amz-content-sha256": hashlib.sha256(body).hexdigest()}
    if settings.s3_session_token:
        headers["x-amz-security-token"] = settings.s3_session_token
    headers |= {name.lower(): value for name, value in extra.items()}
    names = sorted(headers)
    signed = ";".join(names)
    canonical_headers = "".join(f"{n}:{headers[n].strip()}\n" for n in names)
    canonical = "\n".join([method, path, query, canonical_headers, signed, headers["x-amz-content-sha256"]])
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


def send(
    settings: Settings,
    method: str,
    bucket: str,
    key: str = "",
    *,
    query: dict[str, str] | None = None,
    body: bytes = b"",
    extra: dict[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> tuple[int, bytes]:
    """Send one signed request about ``bucket``; its status and body.

    :param settings: the endpoint, region and credentials.
    :param method: the HTTP method.
    :param bucket: the bucket.
    :param key: the object's key (no leading ``/``; "" for the bucket itself).
    :param query: the query's parameters.
    :param body: the payload.
    :param extra: further headers to send and sign.
    :param timeout: seconds to connect, and to wait for each read.
    :raises OSError: the store could not be reached, or its answer was malformed or cut.
    """
    scheme, host, prefix = endpoint(settings, bucket)
    path = f"{prefix}/{quote(key, safe='/-_.~')}"
    text = canonical_query(query or {})
    headers = signed_headers(settings, method, host, path, body, extra or {}, datetime.now(UTC), text)
    connection_type = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    try:
        connection = connection_type(host, timeout=timeout)
    except http.client.HTTPException as error:  # an endpoint that is not host[:port]
        raise OSError(f"{method} s3://{bucket}/{key}: {error!r}") from None
    try:
        connection.request(method, f"{path}?{text}" if text else path, body=body or None, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    except http.client.HTTPException as error:  # a malformed or cut answer: as unreachable
        raise OSError(f"{method} s3://{bucket}/{key} got no valid answer ({error!r})") from None
    finally:
        connection.close()


_XML = "{*}"  # any namespace: S3 names its own, some stores none


@dataclass(frozen=True)
class ListedObject:
    """One entry directly under a listed prefix: an object, or a common prefix (a folder)."""

    name: str
    folder: bool
    modified_ns: int = 0
    size: int = 0


def _modified_ns(text: str) -> int:
    """``LastModified`` (``2026-12-07T21:00:00.000Z``) in ns since the epoch, to the ms as sent."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return calendar.timegm(moment.utctimetuple()) * 1_000_000_000 + moment.microsecond * 1_000


def list_after(settings: Settings, bucket: str, prefix: str, after: str, page_size: int = 1000) -> list[ListedObject]:
    """The entries directly under ``prefix`` (``landing/events``) whose names sort after ``after``,
    in name order (``ListObjectsV2`` with ``start-after``).

    :param settings: the endpoint, region and credentials.
    :param bucket: the bucket.
    :param prefix: the folder's key prefix, without the bucket.
    :param after: the name (within the folder) the listing starts after.
    :param page_size: keys a request (S3 answers at most 1,000).
    :raises OSError: the store could not be reached, did not answer 200 with a listing, or
        answered more than :data:`LIST_MAX_PAGES` pages or for longer than :data:`LIST_DEADLINE_S`.
    :raises ValueError: an entry's time or size does not read as one.
    """
    folder = prefix.strip("/") + "/" if prefix.strip("/") else ""
    query = {"list-type": "2", "prefix": folder, "delimiter": "/", "max-keys": str(page_size)}
    query["start-after"] = folder + after
    found: list[ListedObject] = []
    deadline = time.monotonic() + LIST_DEADLINE_S
    for _ in range(LIST_MAX_PAGES):
        if time.monotonic() > deadline:
            raise OSError(f"listing s3://{bucket}/{folder} took more than {LIST_DEADLINE_S:g} s")
        status, body = send(settings, "GET", bucket, query=query, timeout=LIST_TIMEOUT_S)
        page = ElementTree.fromstring(body) if status == 200 else None
        if page is None or not page.tag.endswith("ListBucketResult"):
            raise OSError(f"listing s3://{bucket}/{folder} answered {status}: {body[:200]!r}")
        for item in page.findall(f"{_XML}Contents"):
            name = item.findtext(f"{_XML}Key", "").removeprefix(folder)
            if not name:
                continue  # the folder's own marker object
            modified = _modified_ns(item.findtext(f"{_XML}LastModified", "1970-01-01T00:00:00Z"))
            found.append(ListedObject(name, False, modified, int(item.findtext(f"{_XML}Size", "0"))))
        for common in page.findall(f"{_XML}CommonPrefixes"):
            found.append(ListedObject(common.findtext(f"{_XML}Prefix", "").removeprefix(folder).rstrip("/"), True))
        token = page.findtext(f"{_XML}NextContinuationToken")
        if page.findtext(f"{_XML}IsTruncated") != "true" or not token:
            return sorted(found, key=lambda o: o.name)
        query = {k: v for k, v in query.items() if k != "start-after"} | {"continuation-token": token}
    raise OSError(f"listing s3://{bucket}/{folder} after {after!r} ran past {LIST_MAX_PAGES} pages")
