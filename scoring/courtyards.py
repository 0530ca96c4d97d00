"""Courtyards (rules.md C1): the areas the castle's walls and towers enclose completely.

The lattice is split into unit cells. Two cells are joined when the edge between them carries no
wall, and the four cells around a lattice point are joined when nothing solid stands on the point:
a wall end without a tower leaves a tower-sized gap there (an open corner does not close a
courtyard). Whatever cannot reach the area beyond the castle is enclosed; each connected piece of
it is one courtyard, so nested courtyards, divided courtyards and walls jutting inwards need no
special cases.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from .castle import Castle, Cell, Edge, Point, cells_around, corners, unit_edge


@dataclass(frozen=True)
class Courtyard:
    id: int
    cells: frozenset[Cell]
    towers: frozenset[Point]  # every distinct tower that touches the courtyard (S2)

    @property
    def anchor(self) -> Cell:
        """A cell to name the courtyard by in messages: its lowest, then leftmost cell."""
        return min(self.cells, key=lambda c: (c[1], c[0]))


@dataclass(frozen=True)
class Occupancy:
    """Which lattice edges carry a wall and which lattice points are solid."""

    walled: frozenset[Edge]
    solid: frozenset[Point]  # a tower stands there, or a long wall passes over it

    @classmethod
    def of(cls, castle: Castle) -> "Occupancy":
        walled = {e for w in castle.walls for e in w.unit_edges()}
        solid = set(castle.towers) | {w.middle for w in castle.walls if w.middle is not None}
        return cls(frozenset(walled), frozenset(solid))


def _neighbours(cell: Cell, occ: Occupancy) -> list[Cell]:
    x, y = cell
    out = []
    # across the four sides
    for side, other in (
        (unit_edge((x, y), (x + 1, y)), (x, y - 1)),
        (unit_edge((x, y + 1), (x + 1, y + 1)), (x, y + 1)),
        (unit_edge((x, y), (x, y + 1)), (x - 1, y)),
        (unit_edge((x + 1, y), (x + 1, y + 1)), (x + 1, y)),
    ):
        if side not in occ.walled:
            out.append(other)
    # through a corner with nothing solid on it (a gap)
    for p in corners(cell):
        if p not in occ.solid:
            out.extend(c for c in cells_around(p) if c != cell)
    return out


def find_courtyards(castle: Castle) -> list[Courtyard]:
    """Every enclosed area of the castle, numbered from 1 in a stable order (lowest cell first)."""
    if not castle.walls:
        return []
    occ = Occupancy.of(castle)
    x0, y0, x1, y1 = castle.bounds()
    # Cells from one beyond the castle on every side: the ring of border cells is certainly outside.
    xs, ys = range(x0 - 1, x1 + 1), range(y0 - 1, y1 + 1)
    inside_box = lambda c: x0 - 1 <= c[0] <= x1 and y0 - 1 <= c[1] <= y1  # noqa: E731

    seen: set[Cell] = set()
    queue: deque[Cell] = deque()
    for x in xs:
        for y in (y0 - 1, y1):
            queue.append((x, y))
    for y in ys:
        for x in (x0 - 1, x1):
            queue.append((x, y))
    seen.update(queue)
    while queue:
        for n in _neighbours(queue.popleft(), occ):
            if n not in seen and inside_box(n):
                seen.add(n)
                queue.append(n)

    towers = set(castle.towers)
    areas: list[frozenset[Cell]] = []
    for y in ys:
        for x in xs:
            if (x, y) in seen:
                continue
            area = {(x, y)}
            seen.add((x, y))
            queue.append((x, y))
            while queue:
                for n in _neighbours(queue.popleft(), occ):
                    if n not in seen:
                        seen.add(n)
                        area.add(n)
                        queue.append(n)
            areas.append(frozenset(area))

    areas.sort(key=lambda cells: min((c[1], c[0]) for c in cells))
    return [
        Courtyard(i, cells, frozenset(p for c in cells for p in corners(c) if p in towers))
        for i, cells in enumerate(areas, start=1)
    ]


def cells_under(point: tuple[float, float]) -> set[Cell]:
    """The cells a point lies in: one inside a cell, two on an edge, four on a lattice point."""
    def spans(v: float) -> list[int]:
        f = math.floor(v)
        return [f - 1, f] if float(v).is_integer() else [f]

    return {(cx, cy) for cx in spans(point[0]) for cy in spans(point[1])}


def courtyard_at(point: tuple[float, float], courtyards: list[Courtyard]) -> Courtyard | None:
    """The courtyard that a point lies strictly inside, or None (outside, or on a wall line between areas)."""
    under = cells_under(point)
    for yard in courtyards:
        if under <= yard.cells:
            return yard
    return None
