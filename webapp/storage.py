"""Where adjudications are kept: SQLite (a file) by default, PostgreSQL when given a database URL.

One small interface, two back ends chosen by the configured URL. Every write is one transaction, so
a request that fails half-way never leaves half a record: the record and its images land together
or not at all.
"""
from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Protocol
from contextlib import contextmanager

# Image roles stored beside an adjudication.
IMAGE_ROLES = ("photo", "overlay", "before_photo", "before_overlay", "after_photo", "after_overlay",
               "photo_2", "photo_3", "photo_4")  # more photos of one castle, read with the first
KINDS = ("score", "move")


class StorageError(RuntimeError):
    """The database could not be reached or refused a write."""


@dataclass
class Image:
    role: str
    content_type: str
    data: bytes


@dataclass
class Adjudication:
    """One stored adjudication: a scored castle (kind "score") or a checked move (kind "move")."""

    id: str
    kind: str
    created_at: str
    updated_at: str
    castle_read: dict | None  # as the photo reader saw it (None for a typed-in castle or a refusal)
    castle_corrected: dict | None  # as the user corrected or typed it (None when never corrected)
    result: dict | None  # castellan-score/1 of the effective castle, or the move check
    reading: dict | None  # what the photo reader measured: confidence, refusal, timings, findings
    extra: dict = field(default_factory=dict)  # move checks: before/after castles, player, added pieces
    ruling: bool = False
    ruled_at: str | None = None
    ruling_note: str | None = None
    edit_token: str = ""
    image_roles: tuple[str, ...] = ()

    @property
    def castle(self) -> dict | None:
        """The castle that counts: the corrected one when there is one, else the one read."""
        return self.castle_corrected if self.castle_corrected is not None else self.castle_read


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_id() -> str:
    # 12 url-safe characters (72 bits): unguessable enough for a shareable link.
    return secrets.token_urlsafe(9)


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _load(value: str | None) -> Any:
    return None if value is None else json.loads(value)


SCHEMA = [
    """CREATE TABLE IF NOT EXISTS adjudications (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        castle_read TEXT,
        castle_corrected TEXT,
        result TEXT,
        reading TEXT,
        extra TEXT NOT NULL,
        ruling INTEGER NOT NULL DEFAULT 0,
        ruled_at TEXT,
        ruling_note TEXT,
        edit_token TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS images (
        adjudication_id TEXT NOT NULL REFERENCES adjudications(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        content_type TEXT NOT NULL,
        data {blob} NOT NULL,
        PRIMARY KEY (adjudication_id, role)
    )""",
    "CREATE INDEX IF NOT EXISTS adjudications_created ON adjudications(created_at)",
]

COLUMNS = ("id, kind, created_at, updated_at, castle_read, castle_corrected, result, reading, extra, "
           "ruling, ruled_at, ruling_note, edit_token")


class Storage(Protocol):
    url: str

    def create(self, *, kind: str, castle_read: dict | None, castle_corrected: dict | None,
               result: dict | None, reading: dict | None, extra: dict | None = None,
               images: list[Image] = ()) -> Adjudication: ...

    def get(self, adjudication_id: str) -> Adjudication | None: ...

    def image(self, adjudication_id: str, role: str) -> Image | None: ...

    def correct(self, adjudication_id: str, castle: dict, result: dict) -> Adjudication: ...

    def mark_ruling(self, adjudication_id: str, note: str | None) -> Adjudication: ...

    def recent(self, limit: int = 20, kind: str | None = "score") -> list[Adjudication]: ...

    def count(self) -> int: ...


class _SqlStorage:
    """The SQL shared by both back ends; subclasses supply connections and the placeholder."""

    url: str
    placeholder = "?"
    blob_type = "BLOB"

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        raise NotImplementedError

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.placeholder)

    def _init_schema(self) -> None:
        with self._transaction() as cur:
            for statement in SCHEMA:
                cur.execute(statement.format(blob=self.blob_type))

    def _row_to_adjudication(self, row: tuple, roles: tuple[str, ...]) -> Adjudication:
        (id_, kind, created, updated, read, corrected, result, reading, extra, ruling, ruled_at,
         note, token) = row
        return Adjudication(
            id=id_, kind=kind, created_at=created, updated_at=updated, castle_read=_load(read),
            castle_corrected=_load(corrected), result=_load(result), reading=_load(reading),
            extra=_load(extra) or {}, ruling=bool(ruling), ruled_at=ruled_at, ruling_note=note,
            edit_token=token, image_roles=roles)

    def create(self, *, kind: str, castle_read: dict | None, castle_corrected: dict | None,
               result: dict | None, reading: dict | None, extra: dict | None = None,
               images: list[Image] = ()) -> Adjudication:
        if kind not in KINDS:
            raise ValueError(f"unknown adjudication kind {kind!r}")
        for image in images:
            if image.role not in IMAGE_ROLES:
                raise ValueError(f"unknown image role {image.role!r}")
        adj_id, token, stamp = new_id(), secrets.token_urlsafe(16), now_iso()
        with self._transaction() as cur:
            cur.execute(self._q(f"INSERT INTO adjudications ({COLUMNS}) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                        (adj_id, kind, stamp, stamp, _dump(castle_read), _dump(castle_corrected),
                         _dump(result), _dump(reading), _dump(extra or {}), 0, None, None, token))
            for image in images:
                cur.execute(self._q("INSERT INTO images (adjudication_id, role, content_type, data) "
                                    "VALUES (?, ?, ?, ?)"),
                            (adj_id, image.role, image.content_type, bytes(image.data)))
        found = self.get(adj_id)
        assert found is not None
        return found

    def get(self, adjudication_id: str) -> Adjudication | None:
        with self._transaction() as cur:
            cur.execute(self._q(f"SELECT {COLUMNS} FROM adjudications WHERE id = ?"), (adjudication_id,))
            row = cur.fetchone()
            if row is None:
                return None
            cur.execute(self._q("SELECT role FROM images WHERE adjudication_id = ? ORDER BY role"),
                        (adjudication_id,))
            roles = tuple(r[0] for r in cur.fetchall())
        return self._row_to_adjudication(tuple(row), roles)

    def image(self, adjudication_id: str, role: str) -> Image | None:
        with self._transaction() as cur:
            cur.execute(self._q("SELECT content_type, data FROM images WHERE adjudication_id = ? AND role = ?"),
                        (adjudication_id, role))
            row = cur.fetchone()
        return None if row is None else Image(role, row[0], bytes(row[1]))

    def correct(self, adjudication_id: str, castle: dict, result: dict) -> Adjudication:
        return self._update_one(adjudication_id,
                                "UPDATE adjudications SET castle_corrected = ?, result = ?, updated_at = ? "
                                "WHERE id = ? AND ruling = 0",
                                (_dump(castle), _dump(result), now_iso(), adjudication_id))

    def mark_ruling(self, adjudication_id: str, note: str | None) -> Adjudication:
        stamp = now_iso()
        return self._update_one(adjudication_id,
                                "UPDATE adjudications SET ruling = 1, ruled_at = ?, ruling_note = ?, "
                                "updated_at = ? WHERE id = ?",
                                (stamp, note, stamp, adjudication_id))

    def _update_one(self, adjudication_id: str, sql: str, params: tuple) -> Adjudication:
        """Run an UPDATE that must change exactly this adjudication (KeyError otherwise) and return it."""
        with self._transaction() as cur:
            cur.execute(self._q(sql), params)
            changed = cur.rowcount
        if changed != 1:
            raise KeyError(adjudication_id)
        found = self.get(adjudication_id)
        assert found is not None
        return found

    def recent(self, limit: int = 20, kind: str | None = "score") -> list[Adjudication]:
        where = "WHERE kind = ? " if kind else ""
        params: tuple = (kind, limit) if kind else (limit,)
        with self._transaction() as cur:
            cur.execute(self._q(f"SELECT {COLUMNS} FROM adjudications {where}"
                                "ORDER BY created_at DESC, id LIMIT ?"), params)
            rows = cur.fetchall()
        return [self._row_to_adjudication(tuple(r), ()) for r in rows]

    def count(self) -> int:
        with self._transaction() as cur:
            cur.execute("SELECT COUNT(*) FROM adjudications")
            return int(cur.fetchone()[0])

    def count_images(self) -> int:
        with self._transaction() as cur:
            cur.execute("SELECT COUNT(*) FROM images")
            return int(cur.fetchone()[0])


class SqliteStorage(_SqlStorage):
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._init_schema()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # One connection per thread; isolation_level=None so transactions are ours to open.
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=True)
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
            # WAL lets readers go on while one request writes (the server runs several threads).
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            self._local.conn = conn
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"the database {self.path} cannot be written: {exc}") from exc
        cur = conn.cursor()
        try:
            yield cur
        except BaseException:
            cur.close()
            conn.rollback()
            raise
        cur.close()
        conn.commit()


class PostgresStorage(_SqlStorage):
    placeholder = "%s"
    blob_type = "BYTEA"

    def __init__(self, url: str) -> None:
        import psycopg  # imported here so that SQLite users need no PostgreSQL client

        self._psycopg = psycopg
        self.url = url
        self._local = threading.local()
        self._init_schema()

    def _connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            try:
                conn = self._psycopg.connect(self.url, connect_timeout=10)
            except self._psycopg.Error as exc:
                raise StorageError(f"cannot connect to the PostgreSQL database: {exc}") from exc
            self._local.conn = conn
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        conn = self._connection()
        try:
            # psycopg's transaction() commits on success and rolls back on any exception.
            with conn.transaction():
                with conn.cursor() as cur:
                    yield cur
        except self._psycopg.OperationalError as exc:
            raise StorageError(f"the PostgreSQL database failed: {exc}") from exc


def open_storage(url: str | Path) -> SqliteStorage | PostgresStorage:
    """A storage for `url`: `postgresql://...` (or `postgres://`), `sqlite:///path`, or a file path."""
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStorage(text)
    if text.startswith("sqlite:///"):
        return SqliteStorage(text[len("sqlite:///"):] or "castellan.sqlite3")
    if "://" in text:
        raise ValueError(f"unsupported database URL {text!r}: use sqlite:///PATH, a file path or postgresql://...")
    return SqliteStorage(text)
