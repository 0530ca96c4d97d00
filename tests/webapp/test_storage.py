"""Storage: the same behaviour on SQLite and on a real PostgreSQL server."""
from __future__ import annotations

import threading

import pytest

from webapp.storage import Image, PostgresStorage, SqliteStorage, open_storage

from .conftest import SMALL_CASTLE


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request, tmp_path):
    if request.param == "sqlite":
        return open_storage(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    return open_storage(request.getfixturevalue("fresh_postgres_url"))


def test_open_storage_chooses_the_back_end_by_url(tmp_path):
    assert isinstance(open_storage(tmp_path / "a.sqlite3"), SqliteStorage)
    assert isinstance(open_storage(f"sqlite:///{tmp_path / 'b.sqlite3'}"), SqliteStorage)
    assert (tmp_path / "b.sqlite3").exists()
    with pytest.raises(ValueError, match="unsupported database URL"):
        open_storage("mysql://somewhere/db")


def test_postgres_url_gives_postgres_storage(fresh_postgres_url):
    assert isinstance(open_storage(fresh_postgres_url), PostgresStorage)


def test_round_trip_keeps_photo_castles_result_and_time(storage):
    photo = bytes(range(256)) * 40
    adj = storage.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None,
                         result={"format": "castellan-score/1", "winners": ["red"]},
                         reading={"confidence": 0.9, "refusal": None},
                         images=[Image("photo", "image/jpeg", photo)])
    got = storage.get(adj.id)
    assert got.castle_read == SMALL_CASTLE and got.castle == SMALL_CASTLE
    assert got.castle_corrected is None
    assert got.result["winners"] == ["red"]
    assert got.reading["confidence"] == 0.9
    assert got.created_at.endswith("Z") and got.ruling is False
    assert got.image_roles == ("photo",)
    assert storage.image(adj.id, "photo").data == photo
    assert storage.image(adj.id, "overlay") is None
    assert storage.get("no-such-id") is None


def test_a_failed_write_stores_nothing(storage):
    before = storage.count()
    # The second image violates NOT NULL inside the transaction: the record must vanish with it.
    with pytest.raises(Exception):
        storage.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None, result={}, reading={},
                       images=[Image("photo", "image/png", b"ok"), Image("overlay", "image/jpeg", None)])
    assert storage.count() == before
    assert storage.count_images() == 0


def test_correction_is_stored_until_a_ruling_locks_it(storage):
    adj = storage.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None, result={"v": 1},
                         reading=None)
    fixed = dict(SMALL_CASTLE, towers=SMALL_CASTLE["towers"][:-1])
    got = storage.correct(adj.id, fixed, {"v": 2})
    assert got.castle_corrected == fixed and got.castle == fixed and got.castle_read == SMALL_CASTLE
    assert got.result == {"v": 2}
    ruled = storage.mark_ruling(adj.id, "checked at the table")
    assert ruled.ruling and ruled.ruling_note == "checked at the table" and ruled.ruled_at
    with pytest.raises(KeyError):
        storage.correct(adj.id, SMALL_CASTLE, {"v": 3})
    assert storage.get(adj.id).result == {"v": 2}
    with pytest.raises(KeyError):
        storage.mark_ruling("missing", None)


def test_concurrent_writes_lose_nothing(storage):
    ids: list[str] = []
    lock = threading.Lock()

    def worker():
        for _ in range(10):
            adj = storage.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None,
                                 result={}, reading=None, images=[Image("photo", "image/png", b"x" * 100)])
            with lock:
                ids.append(adj.id)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 60
    assert storage.count() == 60 and storage.count_images() == 60
    assert all(storage.get(i) is not None for i in ids[::7])


def test_recent_lists_newest_scores(storage):
    a = storage.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None, result={}, reading=None)
    storage.create(kind="move", castle_read=None, castle_corrected=None, result={}, reading=None,
                   extra={"player": "red"})
    assert [x.id for x in storage.recent(kind="score")] == [a.id]
    assert len(storage.recent(kind=None)) == 2
