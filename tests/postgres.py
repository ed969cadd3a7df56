"""A throwaway PostgreSQL server for the tests that run against a real PostgreSQL (the results
store and the episode databases), so that what telcoenv says of PostgreSQL is tested, not assumed.

``TELCOENV_TEST_POSTGRES_URL`` names a database to use instead. Otherwise the server's own
binaries (``initdb`` and ``pg_ctl`` on ``PATH``, else Debian's ``/usr/lib/postgresql/*/bin``)
start a cluster in a new folder, listening on a Unix socket only (no TCP port to collide with),
as the ``postgres`` user when the tests run as root (PostgreSQL refuses to run as root). With no
binaries the tests skip, unless ``TELCOENV_REQUIRE_POSTGRES=1`` (as ``make test`` sets after
installing Debian's server), where they fail instead of passing unseen.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

URL_VARIABLE = "TELCOENV_TEST_POSTGRES_URL"
REQUIRED_VARIABLE = "TELCOENV_REQUIRE_POSTGRES"
PORT = 5432  # names the socket file only: the server listens on no TCP port


class Unavailable(Exception):
    """No PostgreSQL server can be started here (the reason is the message)."""


def _binaries() -> Path:
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("pg_ctl") is not None:
        return Path(initdb).resolve().parent
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise Unavailable("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")


def _as_server_user() -> tuple[list[str], str | None]:
    """The command prefix that runs a program as a user PostgreSQL accepts, and that user."""
    if os.geteuid() != 0:
        return [], None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable(
            "running as root and there is no postgres user to run the server as"
        ) from None
    # util-linux's runuser sits in /usr/sbin, which a CI's PATH may leave out.
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    if runuser is None:
        raise Unavailable("running as root and runuser is missing")
    return [runuser, "-u", "postgres", "--"], "postgres"


@contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a PostgreSQL cluster in a new folder; yield its SQLAlchemy URL; remove it all."""
    binaries = _binaries()
    prefix, user = _as_server_user()
    try:
        import psycopg  # noqa: F401  (the driver of the URL below: SQLAlchemy's default)
    except ImportError:
        raise Unavailable('the psycopg driver is not installed: "telcoenv[postgres]"') from None
    folder = Path(tempfile.mkdtemp(prefix="telcoenv-pg-"))
    if user is not None:
        shutil.chown(folder, user)
    data = folder / "data"

    def run(*command: str) -> None:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Unavailable(f"{Path(command[0]).name} failed: {done.stderr.strip()[-500:]}")

    try:
        run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "tester", "--no-sync")
        options = f"-p {PORT} -k {folder} -c listen_addresses='' -c fsync=off"
        log = str(folder / "server.log")  # not a pipe: the server outlives pg_ctl
        run(str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", log, "-w", "start")
        try:
            yield f"postgresql://tester@/postgres?host={folder}&port={PORT}"
        finally:  # best effort: a server left running stops itself once its lock file is gone
            stop = [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
            subprocess.run([*prefix, *stop], capture_output=True, timeout=120, check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def new_database(url: str) -> str:
    """A new, empty database on the server of ``url`` (uniquely named); its URL. For what must
    not meet another test's tables: each domain's episode tables, a first creation."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"telcoenv_{os.urandom(6).hex()}"
    engine = create_engine(url, isolation_level="AUTOCOMMIT")  # CREATE DATABASE: no transaction
    try:
        with engine.connect() as connection:
            connection.execute(text(f"CREATE DATABASE {name}"))
    finally:
        engine.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False)
