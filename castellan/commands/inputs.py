"""Reading the files a user names on the command line, with errors that say what to do."""
from __future__ import annotations

import json
from pathlib import Path

from scoring import Castle, CastleFormatError, parse_castle

PHOTO_SUFFIXES = {".jpg", ".jpeg", ".png", ".heic", ".heif", ".webp", ".tif", ".tiff", ".bmp"}


class InputError(Exception):
    """A file named on the command line cannot be used; the message says why and what to do."""


def read_bytes(path: str) -> bytes:
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path}: is a folder; name a castellan/1 JSON file or a photo")
    try:
        return p.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None


def looks_like_json(path: str, data: bytes) -> bool:
    if Path(path).suffix.lower() == ".json":
        return True
    if Path(path).suffix.lower() in PHOTO_SUFFIXES:
        return False
    return data.lstrip()[:1] in (b"{", b"[")


def read_castle_file(path: str) -> Castle:
    return castle_from_bytes(path, read_bytes(path))


def castle_from_bytes(path: str, data: bytes) -> Castle:
    """A castle from a file's bytes already read; `path` names the file in errors."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a castellan/1 JSON file (it is not text)") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    try:
        return parse_castle(obj)
    except CastleFormatError as e:
        raise InputError(f"{path}: {e}") from None


def render_size_problem(width: int, height: int, spp: int) -> str | None:
    """What is wrong with a requested render size and sample count, or None when they are usable."""
    if not 16 <= width <= 8000 or not 16 <= height <= 8000:
        return f"size {width}x{height} is out of range; use 16 to 8000 pixels a side"
    if not 1 <= spp <= 4096:
        return f"--spp {spp} is out of range; use 1 to 4096"
    return None
