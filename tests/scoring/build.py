"""Small builders for hand-made castles in tests."""
from __future__ import annotations

from scoring import Castle, Keep, Wall


def castle(towers=(), walls=(), keeps=(), players=None, sets=None) -> Castle:
    return Castle(
        towers=tuple(tuple(t) for t in towers),
        walls=tuple(Wall.between(tuple(a), tuple(b)) for a, b in walls),
        keeps=tuple(Keep(c, tuple(at), d) for c, at, d in keeps),
        players=tuple(players) if players else None,
        sets=sets,
    )


def ring(x0: int, y0: int, x1: int, y1: int) -> tuple[list, list]:
    """Towers on every lattice point of a rectangle's boundary, joined by short walls."""
    pts = [(x, y0) for x in range(x0, x1)] + [(x1, y) for y in range(y0, y1)] + \
          [(x, y1) for x in range(x1, x0, -1)] + [(x0, y) for y in range(y1, y0, -1)]
    walls = [(p, q) for p, q in zip(pts, pts[1:] + pts[:1])]
    return pts, walls


def merge(*parts: tuple[list, list]) -> tuple[list, list]:
    towers, walls = [], []
    for t, w in parts:
        towers += [p for p in t if p not in towers]
        walls += [x for x in w if x not in walls and (x[1], x[0]) not in walls]
    return towers, walls
