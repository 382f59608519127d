"""An S3-compatible server for tests and the local stack: S3Proxy (``org.gaul:s3proxy``, from
Maven Central) on its filesystem backend.

    python -m devstack.s3server [--port 8333] [--data data/s3]    (make s3)

runs one in the foreground, creates the bucket and prints the variables that point runs at it.
Why S3Proxy (see docs/scale-out.md): objects are files written to a temporary name and renamed,
so a PUT appears whole and survives a restart of the server; listings walk the folder, so they
are consistent; it supports multipart uploads and ``If-None-Match`` puts. Each server gets a
random key pair, served on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyarrow import fs as pafs

from devstack import REPO_ROOT
from devstack.download_checksums import S3PROXY_JAR
from devstack.ports import free_port, serving
from devstack.supervisor import kill_group, serve_in_foreground, start_process, stop_group, wait_until_serving
from lakehouse_assets.lib.downloads import ChecksumMismatch, check_folder, download
from lakehouse_assets.lib.settings import current, user_cache

VERSION = "4.1.0"
JAR = f"s3proxy-{VERSION}-jar-with-dependencies.jar"
URL = f"https://repo1.maven.org/maven2/org/gaul/s3proxy/{VERSION}/{JAR}"
REGION = "us-east-1"


def s3proxy_jar() -> Path:
    """The server's jar in the per-user cache, downloaded the first time; checked against the
    SHA-256 pinned in :mod:`devstack.download_checksums` (not one from the same server).

    :raises ChecksumMismatch: the jar is not the pinned one (one sentence naming it).
    :raises RuntimeError: the download failed.
    """
    jar = user_cache() / "s3proxy" / JAR
    what, pins = f"S3Proxy {VERSION}", "devstack/download_checksums.py"
    if not jar.exists():
        try:
            download(URL, jar, S3PROXY_JAR, what, pins)
        except OSError as error:
            raise RuntimeError(f"could not download S3Proxy from Maven Central ({error})") from None
    check_folder(jar.parent, {JAR: S3PROXY_JAR}, what, pins, pattern=JAR)  # once, then stamped
    return jar


def setup() -> int:
    """``make setup``'s step: the jar in the cache, or one sentence saying why not."""
    try:
        s3proxy_jar()
        return 0
    except ChecksumMismatch as error:
        print(error, file=sys.stderr)
        return 1
    except RuntimeError as error:
        print(f"Setup failed: {error}. Check the network or proxy and run `make setup` again.", file=sys.stderr)
        return 1


class S3Server:
    """S3Proxy on 127.0.0.1 with a random key pair; objects live under ``data``.

    :param port: the port to serve on (default: a free one).
    :param data: the folder holding the buckets (default: a temporary one, deleted on stop).
    :param bucket: the bucket created at start.
    """

    def __init__(self, port: int | None = None, data: Path | None = None, bucket: str = "lakehouse") -> None:
        self.port = port or free_port()
        self.bucket = bucket
        self.identity = "lakehouse-" + secrets.token_hex(4)
        self.credential = secrets.token_urlsafe(24)
        self._tmp = None if data else tempfile.TemporaryDirectory(prefix="lakehouse-s3-")
        self.data = Path(data) if data else Path(self._tmp.name)  # type: ignore[union-attr]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The variables that point runs, engines and sensors at this server."""
        return {
            "LAKEHOUSE_S3_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.identity,
            "AWS_SECRET_ACCESS_KEY": self.credential,
            "AWS_REGION": REGION,
        }

    def root(self, prefix: str = "lakehouse") -> str:
        """A data root in the bucket (``s3a://bucket/prefix``)."""
        return f"s3a://{self.bucket}/{prefix}"

    def start(self, timeout: float = 60) -> S3Server:
        if serving(self.port):
            raise RuntimeError(f"port {self.port} is already in use; set LAKEHOUSE_S3_PORT to another port")
        jar = s3proxy_jar()
        (self.data / "buckets").mkdir(parents=True, exist_ok=True)
        properties = self.data / "s3proxy.properties"
        properties.touch(mode=0o600)
        properties.chmod(0o600)
        properties.write_text(
            f"s3proxy.endpoint={self.endpoint}\n"
            "s3proxy.authorization=aws-v2-or-v4\n"
            f"s3proxy.identity={self.identity}\n"
            f"s3proxy.credential={self.credential}\n"
            "jclouds.provider=filesystem\n"
            f"jclouds.filesystem.basedir={self.data / 'buckets'}\n"
        )
        with open(self.data / "s3proxy.log", "ab") as log:  # the child keeps its own descriptor
            self.process = start_process(
                ["java", "-Xmx256m", "-jar", str(jar), "--properties", str(properties)], log=log
            )
        try:
            wait_until_serving(self.port, self.process, timeout=timeout, what="S3Proxy")
        except (RuntimeError, TimeoutError) as error:
            self.stop()
            raise RuntimeError(f"{error}; see {self.data / 's3proxy.log'}") from None
        client = pafs.S3FileSystem(
            access_key=self.identity, secret_key=self.credential, region=REGION, scheme="http",
            endpoint_override=f"127.0.0.1:{self.port}", allow_bucket_creation=True,
        )  # fmt: skip
        if client.get_file_info(self.bucket).type == pafs.FileType.NotFound:
            client.create_dir(self.bucket)
        return self

    def kill(self) -> None:
        """SIGKILL the server (its objects stay under ``data``)."""
        kill_group(self.process)

    def restart(self, down_s: float = 0.0) -> None:
        """Kill the server, stay down ``down_s`` seconds, and start it again on the same data."""
        self.kill()
        time.sleep(down_s)
        self.start()

    def stop(self) -> None:
        stop_group(self.process, 20)
        self.process = None

    def close(self) -> None:
        """Stop, and delete the objects when they were in a temporary folder."""
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run an S3-compatible server (S3Proxy) in the foreground.")
    parser.add_argument("--port", type=int, default=current().s3_port, help="port (LAKEHOUSE_S3_PORT)")
    parser.add_argument("--data", default=str(REPO_ROOT / "data" / "s3"), help="folder of the buckets (kept)")
    parser.add_argument("--bucket", default="lakehouse")
    parser.add_argument("--env-file", help="write the variables that point runs at the server here (for make dev)")
    args = parser.parse_args(argv)
    server = S3Server(args.port, Path(args.data), args.bucket)
    print(f"s3: starting S3Proxy {VERSION} on {server.endpoint}, objects under {args.data}", flush=True)

    def exports() -> str:
        variables = {**server.env(), "LAKEHOUSE_ROOT": server.root()}
        return "".join(f"export {key}={value}\n" for key, value in variables.items())

    def ready_message() -> str:
        # With a file, the key pair stays out of terminals and logs.
        how = f"  source {args.env_file}" if args.env_file else f"\n{exports()}"
        return f"serving bucket {args.bucket}; point runs at it with{how}"

    return serve_in_foreground("s3", server.start, server.stop, exports, ready_message, args.env_file)


if __name__ == "__main__":
    sys.exit(main())
