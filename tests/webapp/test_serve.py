"""`castellan serve`: the app under waitress on loopback, and the app on PostgreSQL end to end."""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from castellan.cli import main

from .conftest import SMALL_CASTLE

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_runs_the_app_under_waitress(tmp_path):
    port = _free_port()
    db = tmp_path / "served.sqlite3"
    proc = subprocess.Popen([sys.executable, "-m", "castellan.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--database", f"sqlite:///{db}"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, CASTELLAN_JUDGE_KEY="k"))
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(base + "/", timeout=2) as resp:
                    assert resp.status == 200 and b'capture="environment"' in resp.read()
                    assert resp.headers["Server"] == "castellan"  # waitress, as configured
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.time() < deadline, "the server did not answer within 30 s"
                time.sleep(0.2)
        req = urllib.request.Request(base + "/api/score", data=json.dumps(SMALL_CASTLE).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = json.loads(resp.read())
        assert resp.status == 201 and body["url"].startswith(base + "/a/")
        assert db.exists()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_rejects_a_bad_port_or_database(capsys, tmp_path):
    assert main(["serve", "--port", "0"]) == 2
    assert "--port" in capsys.readouterr().err
    assert main(["serve", "--database", "mysql://x/y"]) == 2
    assert "database" in capsys.readouterr().err


def test_app_on_postgresql_stores_and_corrects(fresh_postgres_url):
    from webapp import create_app

    app = create_app({"DATABASE": fresh_postgres_url, "JUDGE_KEY": "k"})
    client = app.test_client()
    created = client.post("/api/score", json=SMALL_CASTLE).get_json()
    assert created["players"]["red"]["score"] == 12
    open_castle = dict(SMALL_CASTLE, walls=SMALL_CASTLE["walls"][:-1])
    r = client.put(f"/api/adjudications/{created['id']}/castle", json=open_castle,
                   headers={"X-Edit-Token": created["edit_token"]})
    assert r.status_code == 200
    # A fresh app on the same database (another server process) sees the corrected record.
    again = create_app({"DATABASE": fresh_postgres_url}).test_client()
    stored = again.get(f"/api/adjudications/{created['id']}").get_json()
    assert stored["castle_corrected"]["walls"] == open_castle["walls"]
    assert stored["result"]["players"].get("red", {"score": 0})["score"] == 0
    r = again.post("/api/score", data={"photo": (io.BytesIO(b"not an image"), "x.jpg")},
                   content_type="multipart/form-data")
    assert r.status_code == 400 and "not a photo" in r.get_json()["error"]
    assert app.extensions["castellan_storage"].count() == 1


def test_a_database_that_goes_away_is_a_503_not_a_half_record(postgres_url):
    """The PostgreSQL server refuses connections (here: a database that does not exist)."""
    import psycopg

    from webapp import create_app

    name = "gone_" + os.urandom(4).hex()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    app = create_app({"DATABASE": url})
    storage = app.extensions["castellan_storage"]
    storage._local.conn.close()  # the app's connection is gone, as after a server restart
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}"')
    r = app.test_client().post("/api/score", json=SMALL_CASTLE)
    assert r.status_code == 503 and "database" in r.get_json()["error"]
