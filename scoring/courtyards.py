"""Courtyards (rules.md C1): the areas the castle's walls and towers enclose completely.

The castle is drawn on a grid twice as fine as the lattice, where every unit cell, every lattice edge
and every lattice point has its own entry. Walls block the edges they cover; a tower, or a long wall
passing over a point, blocks the point. A wall end without a tower leaves a tower-sized gap, so an
open corner does not close a courtyard. The free entries are labelled as 8-connected regions (a cell
reaches a free point diagonally); whatever is not connected to the border is enclosed, and each
enclosed region is one courtyard. Nested courtyards, divided courtyards and walls jutting inwards
need no special cases.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from .castle import Castle, Cell, Point

EIGHT_CONNECTED = np.ones((3, 3), dtype=bool)


@dataclass(frozen=True)
class Courtyard:
    id: int
    cells: frozenset[Cell]
    towers: frozenset[Point]  # every distinct tower that touches the courtyard (S2)


def find_courtyards(castle: Castle) -> list[Courtyard]:
    """Every enclosed area of the castle, numbered from 1 in a stable order (lowest cell first)."""
    if not castle.walls:
        return []
    x0, y0, x1, y1 = castle.bounds()
    # Fine grid: lattice point (x, y) -> (2(x - x0) + 2, 2(y - y0) + 2), with a free border all round.
    free = np.ones((2 * (x1 - x0) + 5, 2 * (y1 - y0) + 5), dtype=bool)
    ox, oy = 2 - 2 * x0, 2 - 2 * y0
    for w in castle.walls:
        (ax, ay), (bx, by) = w.a, w.b
        free[2 * ax + ox: 2 * bx + ox + 1, 2 * ay + oy: 2 * by + oy + 1] = False
    middles = {w.middle for w in castle.walls}
    for w in castle.walls:
        for end in w.ends:  # a wall end is a gap unless a tower, or a long wall's middle, fills it
            if end not in middles:
                free[2 * end[0] + ox, 2 * end[1] + oy] = True
    for t in castle.towers:
        free[2 * t[0] + ox, 2 * t[1] + oy] = False

    labels, _ = ndimage.label(free, structure=EIGHT_CONNECTED)
    outside = labels[0, 0]
    cell_labels = labels[1::2, 1::2]  # cell (x, y) sits at fine (2(x - x0) + 1, 2(y - y0) + 1)
    enclosed = (cell_labels != outside) & (cell_labels != 0)
    areas: dict[int, set[Cell]] = {}
    for i, j in zip(*(a.tolist() for a in np.nonzero(enclosed))):
        areas.setdefault(int(cell_labels[i, j]), set()).add((i + x0 - 1, j + y0 - 1))
    touching: dict[int, set[Point]] = {label: set() for label in areas}
    for t in set(castle.towers):
        i, j = t[0] - x0 + 1, t[1] - y0 + 1  # the cell above and right of the tower
        for label in {int(v) for v in cell_labels[i - 1: i + 1, j - 1: j + 1].ravel()}:
            if label in touching:
                touching[label].add(t)

    order = sorted(areas, key=lambda label: min((c[1], c[0]) for c in areas[label]))
    yards = [Courtyard(n, frozenset(areas[label]), frozenset(touching[label])) for n, label in enumerate(order, start=1)]
    return yards


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
