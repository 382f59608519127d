"""A PostgreSQL server for tests and the local stack, from Debian's ``postgresql`` package.

    python -m devstack.postgres [--port 5433]    (make postgres)

runs one in the foreground and prints the URL to export as ``DAGSTER_PG_URL``. Each server is a
fresh cluster (``initdb``) in a temporary folder, served on 127.0.0.1 only (``pg_ctl``) for its
one user, whose password is random and in the URL, and deleted when it stops: for one machine,
not for data that must outlive it. The package is installed with ``apt-get`` when missing (as root,
:func:`devstack.apt.apt_install`).
Postgres refuses to run as root, so as root the cluster runs as the package's ``postgres`` user.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from devstack import REPO_ROOT
from devstack.apt import apt_install
from devstack.ports import free_port, serving
from devstack.supervisor import serve_in_foreground

USER, DATABASE = "lakehouse", "dagster"

# Appended to the repository's dagster.yaml: runs, the event log (pool slots included),
# schedules and sensor cursors in the database at $DAGSTER_PG_URL. The event log is
# dagster-postgres's with a pool slot claim that holds for one step (pool_slots.py says why).
POSTGRES_STORAGE = """
run_storage:
  module: dagster_postgres.run_storage
  class: PostgresRunStorage
  config:
    postgres_url:
      env: DAGSTER_PG_URL
event_log_storage:
  module: lakehouse_assets.lib.accel.pool_slots
  class: PostgresEventLogStorage
  config:
    postgres_url:
      env: DAGSTER_PG_URL
schedule_storage:
  module: dagster_postgres.schedule_storage
  class: PostgresScheduleStorage
  config:
    postgres_url:
      env: DAGSTER_PG_URL
"""


def postgres_home(home: Path) -> Path:
    """A DAGSTER_HOME whose dagster.yaml is the repository's with Postgres storage."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text() + POSTGRES_STORAGE)
    return home


def postgres_bin() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``, installing Debian's package when it is missing."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    on_path = shutil.which("pg_ctl")
    if not found and on_path:
        return Path(on_path).resolve().parent
    if not found:
        apt_install(["postgresql"], "PostgreSQL")
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1, its one user with a random password.

    :param port: the port to serve on (default: a free one).
    """

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.password = secrets.token_urlsafe(18)
        self.data: Path | None = None

    @property
    def url(self) -> str:
        """The URL Dagster's Postgres storage takes (``postgres_url``)."""
        return self.database_url(DATABASE)

    def database_url(self, database: str) -> str:
        return f"postgresql+psycopg2://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, database: str) -> str:
        """A new, empty database (one Dagster instance each); its URL."""
        self._run(str(postgres_bin() / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, database)
        return self.database_url(database)

    def _run(self, *command: str) -> None:
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        env = {**os.environ, "PGPASSWORD": self.password}
        done = subprocess.run([*as_user, *command], capture_output=True, text=True, timeout=120, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(command[0]).name} failed: {(done.stderr or done.stdout).strip()[-800:]}")

    def start(self) -> PostgresServer:
        if serving(self.port):
            raise RuntimeError(f"port {self.port} is already in use; set LAKEHOUSE_POSTGRES_PORT to another port")
        bin_dir = postgres_bin()
        # Under /tmp itself: the postgres user cannot enter root's private temporary folders.
        self.data = Path(tempfile.mkdtemp(prefix="lakehouse-postgres-", dir="/tmp"))
        try:
            password_file = self.data / "password"
            password_file.write_text(self.password + "\n")
            if os.geteuid() == 0:
                for path in (self.data, password_file):
                    shutil.chown(path, "postgres", "postgres")
            cluster = self.data / "cluster"
            # TCP needs the password; the Unix socket lives in a folder only the server's user enters.
            self._run(str(bin_dir / "initdb"), "-D", str(cluster), "-U", USER, "--pwfile", str(password_file),
                      "--auth-host=scram-sha-256", "--auth-local=trust", "--no-sync", "-E", "UTF8")  # fmt: skip
            password_file.unlink()
            options = f"-h 127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=200"
            log = str(self.data / "server.log")
            self._run(str(bin_dir / "pg_ctl"), "-D", str(cluster), "-o", options, "-l", log, "-w", "start")
            self.create_database(DATABASE)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.data is None:
            return
        if (self.data / "cluster" / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):  # already gone (killed)
                self._run(str(postgres_bin() / "pg_ctl"), "-D", str(self.data / "cluster"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.data, ignore_errors=True)
        self.data = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a throwaway PostgreSQL server in the foreground.")
    parser.add_argument("--port", type=int, default=int(os.environ.get("LAKEHOUSE_POSTGRES_PORT", "5433")))
    parser.add_argument("--url-file", help="write the server's DAGSTER_PG_URL here once it serves (for make dev)")
    args = parser.parse_args(argv)
    server = PostgresServer(args.port)
    print(f"postgres: starting on 127.0.0.1:{args.port} (Ctrl-C stops it and deletes its data)", flush=True)
    return serve_in_foreground(
        "postgres", server.start, server.stop, lambda: server.url + "\n",
        lambda: f"serving; point Dagster at it with  export DAGSTER_PG_URL={server.url}",
        args.url_file,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
