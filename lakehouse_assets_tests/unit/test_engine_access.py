"""The engine's token: written once, readable by this user alone, handed to the engine in its
environment (never its command line) and sent by clients to ``localhost``; an engine without a
token serves loopback only. Spark-free: what the engine is started with, not the engine (the
refusal of a real engine is in framework/test_connect_engine.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from lakehouse_assets.lib.spark.connect_server import connect_server_command, connect_server_env
from lakehouse_assets.lib.spark.engine_auth import (
    TOKEN_VARIABLE,
    EngineAccessError,
    client_environment,
    client_url,
    engine_token,
    token_file,
)

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def token_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "engine-token"
    monkeypatch.setenv("LAKEHOUSE_ENGINE_TOKEN_FILE", str(path))
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.delenv("LAKEHOUSE_ENGINE_AUTH", raising=False)
    return path


def test_the_first_engine_writes_a_private_token_and_later_ones_reuse_it(token_in: Path) -> None:
    token = engine_token()
    assert token and len(token) >= 40 and token_file() == token_in
    assert stat.S_IMODE(token_in.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_in.parent.stat().st_mode) == 0o700
    assert engine_token() == token
    assert list(token_in.parent.iterdir()) == [token_in], "a partial token file was left behind"


def test_a_token_file_others_can_read_is_refused(token_in: Path) -> None:
    engine_token()
    token_in.chmod(0o644)
    with pytest.raises(EngineAccessError, match=r"must belong to this user and be readable by it alone: run chmod 600"):
        engine_token()


def test_the_engine_gets_its_token_in_its_environment_not_on_its_command_line(tmp_path: Path) -> None:
    token = engine_token()
    assert token is not None
    env = connect_server_env("local[2]", token)
    command = connect_server_command(15099, master="local[2]", secrets_file=tmp_path / "secrets.properties")
    assert env[TOKEN_VARIABLE] == token
    assert not any(token in part for part in command)


def test_clients_send_the_token_to_localhost_and_pysparks_tools_get_it_in_a_variable() -> None:
    token = engine_token()
    assert client_url("sc://127.0.0.1:15002", token) == f"sc://localhost:15002/;token={token}"
    assert client_url("sc://127.0.0.1:15002/;user_id=me", token) == f"sc://localhost:15002/;user_id=me;token={token}"
    assert client_url("sc://engine.example:15002", token) == f"sc://engine.example:15002/;token={token}"  # over TLS
    assert client_environment("sc://127.0.0.1:15002") == ("sc://localhost:15002", {TOKEN_VARIABLE: token})


def test_an_engine_without_a_token_serves_loopback_only(monkeypatch: pytest.MonkeyPatch, token_in: Path) -> None:
    monkeypatch.setenv("LAKEHOUSE_ENGINE_AUTH", "0")
    monkeypatch.setenv(TOKEN_VARIABLE, "inherited-from-the-shell")
    assert engine_token() is None and not token_in.exists()
    assert TOKEN_VARIABLE not in connect_server_env("local[2]", None)
    monkeypatch.setenv("SPARK_LOCAL_IP", "0.0.0.0")
    with pytest.raises(EngineAccessError) as refused:
        connect_server_env("local[2]", None)
    assert str(refused.value) == (
        "The Spark Connect engine serves SPARK_LOCAL_IP=0.0.0.0 only with a token: unset "
        "LAKEHOUSE_ENGINE_AUTH=0, or set SPARK_LOCAL_IP=127.0.0.1."
    )
    assert connect_server_env("local[2]", "a-token")[TOKEN_VARIABLE] == "a-token"
