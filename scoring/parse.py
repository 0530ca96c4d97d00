"""Reading castellan/1 (../shared/spec/castle-format.md) into a Castle, with errors that name the entry."""
from __future__ import annotations

import json
import math
from typing import Any

from .castle import COLOURS, FORMAT, Castle, Keep, Point, Wall

KNOWN_KEYS = {"format", "towers", "walls", "keeps", "players", "sets"}


class CastleFormatError(ValueError):
    """The input is not a well-formed castellan/1 castle; the message names the offending entry."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _lattice_point(value: Any, where: str) -> Point:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise CastleFormatError(f"{where}: expected a lattice point [x, y], got {json.dumps(value, default=str)}")
    x, y = value
    for v in (x, y):
        if _is_number(v) and float(v).is_integer() and not _is_int(v):
            continue  # 3.0 is a lattice point written as a float
        if not _is_int(v):
            raise CastleFormatError(
                f"{where}: {json.dumps(value, default=str)} is not on the lattice (x and y must be whole numbers)"
            )
    return (int(x), int(y))


def _wall(entry: Any, where: str) -> Wall:
    if not isinstance(entry, dict) or "from" not in entry or "to" not in entry:
        raise CastleFormatError(f'{where}: expected {{"from": [x, y], "to": [x, y]}}, got {json.dumps(entry, default=str)}')
    p = _lattice_point(entry["from"], f"{where}.from")
    q = _lattice_point(entry["to"], f"{where}.to")
    if p[0] != q[0] and p[1] != q[1]:
        raise CastleFormatError(f"{where}: diagonal wall from {list(p)} to {list(q)}")
    length = abs(p[0] - q[0]) + abs(p[1] - q[1])
    if length not in (1, 2):
        raise CastleFormatError(
            f"{where}: wall from {list(p)} to {list(q)} has length {length}; a short wall spans 1 lattice step, a long wall 2"
        )
    wall = Wall.between(p, q)
    kind = entry.get("kind")
    if kind is not None and kind not in ("short", "long"):
        raise CastleFormatError(f'{where}.kind: {json.dumps(kind)} is not "short" or "long"')
    if kind is not None and kind != wall.kind:
        raise CastleFormatError(f"{where}: kind {kind!r} but the wall from {list(p)} to {list(q)} is {wall.kind}")
    return wall


def _keep(entry: Any, where: str) -> Keep:
    if not isinstance(entry, dict):
        raise CastleFormatError(f'{where}: expected {{"colour": ..., "at": [x, y]}}, got {json.dumps(entry, default=str)}')
    colour = entry.get("colour")
    if colour not in COLOURS:
        raise CastleFormatError(f"{where}.colour: {json.dumps(colour, default=str)} is not one of {', '.join(COLOURS)}")
    at = entry.get("at")
    if not isinstance(at, (list, tuple)) or len(at) != 2 or not all(_is_number(v) for v in at):
        raise CastleFormatError(f"{where}.at: expected a point [x, y] of numbers, got {json.dumps(at, default=str)}")
    double = entry.get("double", False)
    if not isinstance(double, bool):
        raise CastleFormatError(f"{where}.double: expected true or false, got {json.dumps(double, default=str)}")
    return Keep(colour, (float(at[0]), float(at[1])), double)


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise CastleFormatError(f"{key}: expected a list, got {type(value).__name__}")
    return value


def parse_castle(data: dict[str, Any] | str | bytes) -> Castle:
    """Read a castellan/1 castle from a parsed JSON object or from JSON text."""
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CastleFormatError(f"not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise CastleFormatError(f"a castle is a JSON object, got {type(data).__name__}")
    fmt = data.get("format")
    if fmt != FORMAT:
        raise CastleFormatError(f'format: expected "{FORMAT}", got {json.dumps(fmt, default=str)}')

    towers = tuple(_lattice_point(t, f"towers[{i}]") for i, t in enumerate(_list(data, "towers")))
    walls = tuple(_wall(w, f"walls[{i}]") for i, w in enumerate(_list(data, "walls")))
    keeps = tuple(_keep(k, f"keeps[{i}]") for i, k in enumerate(_list(data, "keeps")))

    players = data.get("players")
    if players is not None:
        if not isinstance(players, list) or not all(p in COLOURS for p in players):
            raise CastleFormatError(f"players: expected a list of colours from {', '.join(COLOURS)}, got {json.dumps(players, default=str)}")
        if len(set(players)) != len(players):
            raise CastleFormatError(f"players: a colour is named twice in {json.dumps(players)}")
        players = tuple(players)

    sets = data.get("sets")
    if sets is not None and (not _is_int(sets) or sets not in (1, 2)):
        raise CastleFormatError(f"sets: expected 1 or 2, got {json.dumps(sets, default=str)}")

    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    return Castle(towers=towers, walls=walls, keeps=keeps, players=players, sets=sets, extra=extra)
