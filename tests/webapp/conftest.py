"""Fixtures for the web app's tests: an app on a fresh SQLite file, a real PostgreSQL server in a
temporary directory (when the binaries exist), small real photos, and castles."""
from __future__ import annotations

import glob
import io
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from PIL import Image

from webapp import create_app

JUDGE_KEY = "judge-secret-for-tests"

# A 2 x 1 courtyard of 6 towers (short walls only), claimed by red with a Double Keep: 12 points.
SMALL_CASTLE = {
    "format": "castellan/1",
    "towers": [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]],
    "walls": [
        {"from": [0, 0], "to": [1, 0]}, {"from": [1, 0], "to": [2, 0]},
        {"from": [0, 1], "to": [1, 1]}, {"from": [1, 1], "to": [2, 1]},
        {"from": [0, 0], "to": [0, 1]}, {"from": [2, 0], "to": [2, 1]},
    ],
    "keeps": [{"colour": "red", "at": [0.5, 0.5], "double": True}],
}


def castle_copy(**changes) -> dict:
    import copy

    castle = copy.deepcopy(SMALL_CASTLE)
    castle.update(changes)
    return castle


@pytest.fixture
def app(tmp_path):
    app = create_app({"DATABASE": str(tmp_path / "castellan.sqlite3"), "TESTING": True,
                      "JUDGE_KEY": JUDGE_KEY, "SECRET_KEY": "test"})
    yield app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def store(app):
    return app.extensions["castellan_storage"]


def jpeg_bytes(size=(64, 48), colour=(120, 90, 60)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def png_bytes(size=(64, 48)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (30, 140, 60)).save(buf, "PNG")
    return buf.getvalue()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_url():
    """A throwaway PostgreSQL cluster on a free loopback port, for the life of the test session."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    initdb = bins[-1] if bins else shutil.which("initdb")
    if not initdb:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
                    "apt-get install postgresql (scripts/setup.sh test does)")
    pg_ctl = str(Path(initdb).with_name("pg_ctl"))
    root = tempfile.mkdtemp(prefix="castellan-pg-")
    run_as: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: run the cluster as the postgres system user.
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
        os.chmod(root, 0o777)
        run_as = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(root, "data")
    port = _free_port()
    subprocess.run(run_as + [initdb, "-D", data, "-U", "castellan", "--auth=trust", "-E", "UTF8",
                             "--no-sync"], check=True, capture_output=True)
    subprocess.run(run_as + [pg_ctl, "-D", data, "-l", os.path.join(root, "log"), "-w", "-t", "30",
                             "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
                             "start"], check=True, capture_output=True)
    url = f"postgresql://castellan@127.0.0.1:{port}/postgres"
    try:
        import psycopg

        deadline = time.time() + 20
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        subprocess.run(run_as + [pg_ctl, "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def fresh_postgres_url(postgres_url):
    """A new, empty database in the session's cluster for one test."""
    import psycopg

    name = "t_" + os.urandom(6).hex()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_url.rsplit("/", 1)[0] + "/" + name
