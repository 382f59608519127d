"""Who may use the Spark Connect engine: the holders of its token.

Spark Connect 4 checks a pre-shared bearer token when its server is started with one: Spark reads
``spark.connect.authenticate.token`` or, as here, the variable ``SPARK_CONNECT_AUTHENTICATE_TOKEN``
(so the token is on no command line). PySpark's client sends it from the ``token`` parameter of
its ``sc://`` URL, or from that same variable. With a token, PySpark uses TLS to every host but
one literally named ``localhost``, which gets gRPC's local credentials: plain TCP, refused unless
the peer is on this machine. The engine serves plain gRPC, so a loopback ``SPARK_REMOTE`` is
reached as ``localhost``; an engine on another machine needs TLS in front of it.

The token lives in ``LAKEHOUSE_ENGINE_TOKEN_FILE`` (default
``~/.config/lakehouse_assets/engine-token``), mode 0600 in a 0700 folder. The first engine
started writes it; later engines reuse it, and every client reads it when it connects.
``LAKEHOUSE_ENGINE_AUTH=0`` starts an engine without one, on a loopback address only.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import urllib.parse
from pathlib import Path

from lakehouse_assets.lib.errors import LakehouseError
from lakehouse_assets.lib.settings import current, user_config

# Spark's own variable: the server's token, and the PySpark client's when its URL names none.
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"


class EngineAccessError(LakehouseError):
    """The engine's token cannot be used, or an engine without one would serve beyond loopback."""


def token_file() -> Path:
    """Where the engine's token is kept (``LAKEHOUSE_ENGINE_TOKEN_FILE``, else the per-user default)."""
    configured = current().engine_token_file
    return Path(configured).expanduser() if configured else user_config() / "engine-token"


def engine_token() -> str | None:
    """The token an engine starts with, written to :func:`token_file` when missing; None when
    ``LAKEHOUSE_ENGINE_AUTH=0``."""
    if not current().engine_auth:
        return None
    path = token_file()
    if not path.exists():
        _write_new_token(path)
    return _read_token(path)


def client_token() -> str | None:
    """The token a client sends: :func:`token_file`'s, or None when there is none (an engine
    started with ``LAKEHOUSE_ENGINE_AUTH=0``; any other refuses the client, saying so)."""
    path = token_file()
    return _read_token(path) if path.exists() else None


def _write_new_token(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(secrets.token_urlsafe(32) + "\n")
    try:
        os.link(partial, path)  # never over the token another engine has just written
    except FileExistsError:
        pass
    finally:
        partial.unlink()


def _read_token(path: Path) -> str:
    info = path.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise EngineAccessError(
            f"The engine's token file {path} must belong to this user and be readable by it alone: "
            f"run chmod 600 {path}, or delete it and start the engine again to get a new token."
        )
    token = path.read_text().strip()
    if not token:
        raise EngineAccessError(f"The engine's token file {path} is empty: delete it and start the engine again.")
    return token


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback interface.

    :param host: ``localhost``, an IPv4 or IPv6 address (brackets allowed), or another name.
    """
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(address: str, token: str | None) -> None:
    """Refuse an engine without a token on any address but loopback.

    :param address: the address the engine would serve on (``SPARK_LOCAL_IP``).
    :param token: the engine's token, None for none.
    """
    if token is None and not is_loopback(address):
        raise EngineAccessError(
            f"The Spark Connect engine serves SPARK_LOCAL_IP={address} only with a token: unset "
            "LAKEHOUSE_ENGINE_AUTH=0, or set SPARK_LOCAL_IP=127.0.0.1."
        )


def client_address(remote: str) -> str:
    """``remote`` as a client that sends a token must name it: a loopback host as ``localhost``
    (PySpark insists on TLS to any other name).

    :param remote: an ``sc://host:port`` URL, possibly with ``/;`` parameters.
    """
    parsed = urllib.parse.urlparse("http" + remote.removeprefix("sc"))
    if not parsed.hostname or not is_loopback(parsed.hostname) or parsed.hostname == "localhost":
        return remote
    port = f":{parsed.port}" if parsed.port else ""
    return urllib.parse.urlunparse(parsed._replace(scheme="sc", netloc=f"localhost{port}"))


def client_url(remote: str, token: str | None) -> str:
    """The URL a PySpark client connects with: ``remote`` plus ``token`` (unless it names one).

    :param remote: the engine's ``sc://`` URL (``SPARK_REMOTE``).
    :param token: the token to send, None for none.
    """
    if token is None or ";token=" in remote:
        return remote
    address = client_address(remote)
    if "/;" in address:
        return f"{address};token={token}"
    return f"{address.rstrip('/')}/;token={token}"


def client_environment(remote: str) -> tuple[str, dict[str, str]]:
    """For PySpark's own tools started as clients (``spark-pipelines run --remote``): the URL to
    give them and the variables that carry the token (never the command line).

    :param remote: the engine's ``sc://`` URL.
    """
    token = client_token()
    if token is None:
        return remote, {}
    return client_address(remote), {TOKEN_VARIABLE: token}
