"""The castle model: towers, walls and keeps on the square lattice of rules.md G3.

Like python-chess's board, the model is small and exact: lattice points are integer pairs, a wall is
two lattice points one or two steps apart along an axis, a keep is a colour at a point. Pieces are kept
in tuples rather than sets so that a castle with two pieces in one place (a physical impossibility
that a photo reading or a typing error can produce) is still representable and can be reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

Point = tuple[int, int]
Cell = tuple[int, int]  # a unit square, named by its lower-left lattice point
Edge = tuple[Point, Point]  # a unit lattice edge, endpoints sorted

FORMAT = "castellan/1"
COLOURS: tuple[str, ...] = ("red", "blue", "yellow", "green")
# The keep colours of each edition (rules.md, components): one set is one edition's two colours.
EDITIONS: tuple[tuple[str, ...], ...] = (("red", "blue"), ("yellow", "green"))

# One box (rules.md, Components): grey pieces and keeps per colour.
TOWERS_PER_SET = 32
SHORT_WALLS_PER_SET = 30
LONG_WALLS_PER_SET = 26
GREY_PIECES_PER_SET = {"towers": TOWERS_PER_SET, "short walls": SHORT_WALLS_PER_SET, "long walls": LONG_WALLS_PER_SET}
KEEPS_PER_COLOUR = 10


def unit_edge(p: Point, q: Point) -> Edge:
    return (p, q) if p <= q else (q, p)


def cells_around(p: Point) -> tuple[Cell, Cell, Cell, Cell]:
    """The four unit squares that share the lattice point p as a corner."""
    x, y = p
    return ((x - 1, y - 1), (x, y - 1), (x - 1, y), (x, y))


def cells_beside(edge: Edge) -> tuple[Cell, Cell]:
    """The two unit squares on either side of a unit edge."""
    (x0, y0), (x1, y1) = edge
    if y0 == y1:  # horizontal edge from (x0, y) to (x0 + 1, y)
        return ((x0, y0 - 1), (x0, y0))
    return ((x0 - 1, y0), (x0, y0))


@dataclass(frozen=True, order=True)
class Wall:
    """A wall from lattice point a to b (a < b), one step (short) or two steps (long) long."""

    a: Point
    b: Point

    @classmethod
    def between(cls, p: Point, q: Point) -> "Wall":
        p, q = (tuple(p), tuple(q))
        return cls(p, q) if p <= q else cls(q, p)

    @cached_property
    def length(self) -> int:
        return abs(self.b[0] - self.a[0]) + abs(self.b[1] - self.a[1])

    @cached_property
    def kind(self) -> str:
        return "short" if self.length == 1 else "long"

    @property
    def ends(self) -> tuple[Point, Point]:
        return (self.a, self.b)

    @cached_property
    def direction(self) -> Point:
        return ((self.b[0] - self.a[0]) // self.length, (self.b[1] - self.a[1]) // self.length)

    @cached_property
    def middle(self) -> Point | None:
        """The lattice point a long wall passes over, where no tower can stand (G3)."""
        if self.length != 2:
            return None
        dx, dy = self.direction
        return (self.a[0] + dx, self.a[1] + dy)

    # Cached: walls are immutable and these are asked for again and again while scoring.
    @cached_property
    def _points(self) -> tuple[Point, ...]:
        dx, dy = self.direction
        return tuple((self.a[0] + i * dx, self.a[1] + i * dy) for i in range(self.length + 1))

    @cached_property
    def _unit_edges(self) -> tuple[Edge, ...]:
        pts = self._points
        return tuple(unit_edge(p, q) for p, q in zip(pts, pts[1:]))

    def points(self) -> tuple[Point, ...]:
        """Every lattice point the wall touches, from a to b."""
        return self._points

    def unit_edges(self) -> tuple[Edge, ...]:
        return self._unit_edges

    def to_json(self) -> dict[str, Any]:
        return {"from": list(self.a), "to": list(self.b), "kind": self.kind}

    def __str__(self) -> str:
        return f"{self.kind} wall {list(self.a)}-{list(self.b)}"


@dataclass(frozen=True)
class Keep:
    """A keep of one colour standing at a point (lattice units); `double` marks two stacked (C5)."""

    colour: str
    at: tuple[float, float]
    double: bool = False

    @property
    def pieces(self) -> int:
        return 2 if self.double else 1

    def to_json(self) -> dict[str, Any]:
        return {"colour": self.colour, "at": [self.at[0], self.at[1]], "double": self.double}

    def __str__(self) -> str:
        return f"{'Double Keep' if self.double else 'keep'} of {self.colour} at [{self.at[0]:g}, {self.at[1]:g}]"


@dataclass(frozen=True)
class Castle:
    """One castle as castellan/1 describes it."""

    towers: tuple[Point, ...] = ()
    walls: tuple[Wall, ...] = ()
    keeps: tuple[Keep, ...] = ()
    players: tuple[str, ...] | None = None
    sets: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def colours_in_play(self) -> tuple[str, ...]:
        """Who played: the declared players, else every colour that has a keep on the table."""
        named = set(self.players or ()) | {k.colour for k in self.keeps}
        return tuple(c for c in COLOURS if c in named)

    @property
    def sets_in_play(self) -> int:
        if self.sets is not None:
            return self.sets
        return 1 if len(self.colours_in_play) <= 2 else 2

    def pieces_left(self) -> dict[str, int]:
        """Per kind of grey piece (as GREY_PIECES_PER_SET names them), how many the boxes in play hold
        that the castle does not use; negative where it uses more than they hold."""
        n_short = sum(1 for w in self.walls if w.length == 1)
        have = {"towers": len(self.towers), "short walls": n_short, "long walls": len(self.walls) - n_short}
        return {kind: per_set * self.sets_in_play - have[kind] for kind, per_set in GREY_PIECES_PER_SET.items()}

    @property
    def is_empty(self) -> bool:
        return not self.towers and not self.walls

    def bounds(self) -> tuple[int, int, int, int]:
        """(min x, min y, max x, max y) over every lattice point a piece touches."""
        pts = list(self.towers) + [p for w in self.walls for p in w.ends]
        if not pts:
            return (0, 0, 0, 0)
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        return (min(xs), min(ys), max(xs), max(ys))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        out["format"] = FORMAT
        out["towers"] = [list(t) for t in self.towers]
        out["walls"] = [w.to_json() for w in self.walls]
        out["keeps"] = [k.to_json() for k in self.keeps]
        if self.players is not None:
            out["players"] = list(self.players)
        if self.sets is not None:
            out["sets"] = self.sets
        return out
