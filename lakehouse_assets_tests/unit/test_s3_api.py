"""The S3 requests the framework signs itself (Spark-free, no server): SigV4 against AWS's worked
examples, and a start-after listing's answers read, paged and refused. Against a real server:
lakehouse_assets_tests/scaleout/test_landing_sensor_s3.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lakehouse_assets.lib.engine.intake import entries
from lakehouse_assets.lib.engine.state import s3_api
from lakehouse_assets.lib.engine.state.s3_api import canonical_query, signed_headers
from lakehouse_assets.lib.settings import current

pytestmark = pytest.mark.unit
KEYS = {"AWS_ACCESS_KEY_ID": "key", "AWS_SECRET_ACCESS_KEY": "secret", "LAKEHOUSE_S3_ENDPOINT": "http://127.0.0.1:9"}


def page(keys: list[str], folders: list[str] = (), token: str | None = None, prefix: str = "in/") -> bytes:  # type: ignore[assignment]
    """A ListObjectsV2 answer as S3 writes it."""
    contents = "".join(
        f"<Contents><Key>{prefix}{k}</Key><LastModified>2026-12-07T21:00:0{i % 10}.250Z</LastModified>"
        f"<Size>{len(k)}</Size></Contents>"
        for i, k in enumerate(keys)
    )
    common = "".join(f"<CommonPrefixes><Prefix>{prefix}{f}/</Prefix></CommonPrefixes>" for f in folders)
    more = f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken>" if token else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        f"<Name>b</Name>{contents}{common}{more}</ListBucketResult>"
    ).encode()


class Store:
    """The store's answers, one a request in turn, and the queries it was asked."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, bytes]] = []
        self.asked: list[dict[str, str]] = []

    def send(self, settings, method, bucket, key="", *, query=None, timeout=0.0, **_):  # type: ignore[no-untyped-def]
        self.asked.append(dict(query or {}))
        return self.answers.pop(0) if self.answers else (200, page([]))


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Store:
    faked = Store()
    monkeypatch.setattr(s3_api, "send", faked.send)
    return faked


def test_a_listing_pages_through_the_names_after_a_name(store: Store) -> None:
    store.answers += [(200, page(["", "b.json"], token="t/1=")), (200, page(["c.json"], folders=["sub"]))]
    listed = s3_api.list_after(current(KEYS), "b", "/in/", "a.json")
    assert [(o.name, o.folder, o.size) for o in listed] == [
        ("b.json", False, 6),
        ("c.json", False, 6),
        ("sub", True, 0),
    ]
    assert listed[0].modified_ns == 1_796_677_201_250_000_000  # 2026-12-07T21:00:01.250Z
    first, second = store.asked
    assert first == {
        "list-type": "2",
        "prefix": "in/",
        "delimiter": "/",
        "max-keys": "1000",
        "start-after": "in/a.json",
    }
    assert second["continuation-token"] == "t/1=" and "start-after" not in second


@pytest.mark.parametrize(
    "answer",
    [(403, b"<Error><Code>AccessDenied</Code></Error>"), (200, b"<html>a proxy's page</html>"), (200, b"<Error/>")],
)
def test_an_answer_that_is_not_a_listing_is_refused(store: Store, answer: tuple[int, bytes]) -> None:
    store.answers.append(answer)
    with pytest.raises(OSError, match=r"^listing s3://b/in/ answered "):
        s3_api.list_after(current(KEYS), "b", "in", "a")


def test_a_store_that_repeats_its_token_is_given_up_on(store: Store) -> None:
    store.answers += [(200, page([f"k{i}"], token="same")) for i in range(s3_api.LIST_MAX_PAGES + 5)]
    with pytest.raises(OSError, match="ran past 20 pages"):
        s3_api.list_after(current(KEYS), "b", "in", "a")


def test_a_listing_that_cannot_be_made_or_read_means_listing_whole(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entries, "_FAILED_AT", {})
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    store.answers.append((200, page(["b.json"]).replace(b"2026-12-07T21:00:00.250Z", b"yesterday")))
    assert entries.list_objects_after("s3a://b/in", ["*.json"], "a") is None
    entries._FAILED_AT.clear()
    store.answers.append((200, b"<ListBucketResult><Contents><Key>in/b</Key>"))  # cut short
    assert entries.list_objects_after("s3a://b/in", ["*.json"], "a") is None
    assert entries.list_objects_after("gs://b/in", ["*.json"], "a") is None  # another store
    asked = len(store.asked)
    assert entries.list_objects_after("s3a://b/in", ["*.json"], "a") is None  # failed lately: not asked again
    assert len(store.asked) == asked
    monkeypatch.setattr(entries, "_FAILED_AT", {})
    store.answers.append((200, page(["b.json", "_c.json", "d.txt"], folders=["sub"])))
    kinds = {e.name: e.kind for e in entries.list_objects_after("s3a://b/in", ["*.json"], "a") or []}
    assert kinds == {"b.json": "file", "_c.json": "in_progress", "d.txt": "unmatched", "sub": "folder"}
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert entries.list_objects_after("s3a://b/in", ["*.json"], "a") is None  # nothing to sign with


def test_conditional_writes_are_signed_as_aws_documents() -> None:
    """AWS's worked example of Signature Version 4 (GET Object, examplebucket/test.txt)."""
    settings = current(
        {
            "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        }
    )
    headers = signed_headers(
        settings, "GET", "examplebucket.s3.amazonaws.com", "/test.txt", b"", {"Range": "bytes=0-9"},
        datetime(2013, 5, 24, tzinfo=UTC),
    )  # fmt: skip
    assert headers["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


def test_a_listing_with_a_query_is_signed_as_aws_documents() -> None:
    """AWS's worked example of a signed query (GET Bucket, List Objects: ?max-keys=2&prefix=J)."""
    settings = current(
        {
            "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        }
    )
    query = canonical_query({"prefix": "J", "max-keys": "2"})
    assert query == "max-keys=2&prefix=J"
    headers = signed_headers(
        settings, "GET", "examplebucket.s3.amazonaws.com", "/", b"", {}, datetime(2013, 5, 24, tzinfo=UTC), query
    )
    assert headers["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
    )
    assert canonical_query({"start-after": "landing/ev 1/é"}) == "start-after=landing%2Fev%201%2F%C3%A9"
