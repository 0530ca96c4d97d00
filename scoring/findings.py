"""Findings: what a castle shows against the rules, each with a rule id a judge can look up.

Every check is a plain function of the castle (and its courtyards) returning findings, in the manner
of python-chess's legality methods; `scoring.score.score_castle` runs them all and `geometry_findings`
the ones about grey pieces alone (the move check compares those before and after a turn).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from .castle import (
    GREY_PIECES_PER_SET,
    KEEPS_PER_COLOUR,
    Castle,
    Keep,
    Point,
    Wall,
)
from .courtyards import Courtyard

VIOLATION, WARNING, NOTICE = "violation", "warning", "notice"
SEVERITY_ORDER = {VIOLATION: 0, WARNING: 1, NOTICE: 2}
# Piece counts come from the rules' list of components, which carries no rule id of its own.
COMPONENTS = "components"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    message: str
    at: tuple[tuple[float, float], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "message": self.message, "at": [list(p) for p in self.at]}


def _pt(p: tuple[float, float]) -> str:
    return f"[{p[0]:g}, {p[1]:g}]"


def overlaps(castle: Castle) -> list[Finding]:
    """Two pieces in one place: a tower twice, walls sharing a stretch, a tower on a long wall's middle (G3)."""
    found = []
    for p, n in Counter(castle.towers).items():
        if n > 1:
            found.append(Finding("G3", VIOLATION, f"{n} towers stand on the same lattice point {_pt(p)}", (p,)))
    by_edge: dict[tuple[Point, Point], list[Wall]] = defaultdict(list)
    for w in castle.walls:
        for e in w.unit_edges():
            by_edge[e].append(w)
    reported: set[frozenset[Wall]] = set()
    for e, walls in by_edge.items():
        group = frozenset(walls)
        if len(walls) > 1 and group not in reported:
            reported.add(group)
            names = " and ".join(str(w) for w in walls)
            found.append(Finding("G3", VIOLATION, f"{names} overlap between {_pt(e[0])} and {_pt(e[1])}", e))
    towers = set(castle.towers)
    middles: dict[Point, list[Wall]] = defaultdict(list)
    for w in castle.walls:
        if w.middle is not None:
            middles[w.middle].append(w)
    for m, walls in middles.items():
        if m in towers:
            found.append(Finding("G3", VIOLATION, f"a tower stands at {_pt(m)} under the middle of the {walls[0]}", (m,)))
        if len(walls) > 1:
            found.append(Finding("G3", VIOLATION, f"{walls[0]} and {walls[1]} cross at {_pt(m)}", (m,)))
    return found


def walls_ending_under_long_walls(castle: Castle) -> list[tuple[Wall, Point, Wall]]:
    """(wall, its end, the long wall) for every wall end under a long wall's middle (G4, G5)."""
    middles = {w.middle: w for w in castle.walls if w.middle is not None}
    return [(w, end, middles[end]) for w in castle.walls for end in w.ends if end in middles and middles[end] != w]


def blocked_ends(castle: Castle) -> list[Finding]:
    """A wall end under a long wall's middle can never take a tower (G4; the long wall blocks it, G5)."""
    return [Finding("G4", VIOLATION,
                    f"the {w} ends at {_pt(end)} under the middle of the {long_wall}: no tower can be attached there (G4, G5)",
                    (end,))
            for w, end, long_wall in walls_ending_under_long_walls(castle)]


def loose_ends(castle: Castle) -> list[Finding]:
    """Wall ends without a tower: open ends, and junctions of walls with no tower (G1), as notices."""
    towers = set(castle.towers)
    middles = {w.middle for w in castle.walls if w.middle is not None}
    ends: dict[Point, list[Wall]] = defaultdict(list)
    for w in castle.walls:
        for e in w.ends:
            ends[e].append(w)
    found = []
    for p, walls in sorted(ends.items()):
        if p in towers or p in middles:
            continue
        if len(walls) == 1:
            found.append(Finding("G1", NOTICE, f"the {walls[0]} has an open end at {_pt(p)} with no tower", (p,)))
        else:
            found.append(Finding("G1", NOTICE, f"{len(walls)} walls meet at {_pt(p)} with no tower between them", (p,)))
    return found


def castle_parts(castle: Castle) -> list[set[Point]]:
    """The separate groups of pieces, each as the lattice points its pieces touch (largest first)."""
    parent: dict[Point, Point] = {}

    def find(p: Point) -> Point:
        parent.setdefault(p, p)
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for t in castle.towers:
        find(t)
    for w in castle.walls:
        pts = w.points()
        for q in pts[1:]:
            parent[find(q)] = find(pts[0])
    groups: dict[Point, set[Point]] = defaultdict(set)
    for p in list(parent):
        groups[find(p)].add(p)
    return sorted(groups.values(), key=lambda g: (-len(g), min(g)))


def separate_castles(castle: Castle) -> list[Finding]:
    parts = castle_parts(castle)
    return [
        Finding("G6", VIOLATION, f"a second castle of {len(part)} lattice points stands apart from the main castle near {_pt(min(part))}",
                tuple(sorted(part)))
        for part in parts[1:]
    ]


def keeps_on_pieces(castle: Castle) -> list[Finding]:
    """A keep stands loose inside a courtyard (G7), not on a wall line or a tower."""
    walled = {e for w in castle.walls for e in w.unit_edges()}
    solid = set(castle.towers) | {p for w in castle.walls for p in w.points()}
    found = []
    for k in castle.keeps:
        x, y = k.at
        fx, fy = math.floor(x), math.floor(y)
        if x.is_integer() and y.is_integer():
            on_piece = (fx, fy) in solid
        elif x.is_integer():
            on_piece = ((fx, fy), (fx, fy + 1)) in walled
        elif y.is_integer():
            on_piece = ((fx, fy), (fx + 1, fy)) in walled
        else:
            on_piece = False
        if on_piece:
            found.append(Finding("G7", VIOLATION, f"the {k} stands on a wall or tower; keeps stand loose inside courtyards", (k.at,)))
    return found


def claims(courtyards: list[Courtyard], keeps_by_yard: dict[int, list[Keep]]) -> list[Finding]:
    """Every courtyard claimed (C7), by exactly one colour (C2), with one keep."""
    found = []
    for yard in courtyards:
        keeps = keeps_by_yard.get(yard.id, [])
        colours = sorted({k.colour for k in keeps})
        where = tuple(sorted(yard.cells))
        if not keeps:
            found.append(Finding("C7", VIOLATION,
                                 f"courtyard {yard.id} ({len(yard.towers)} towers) is not claimed: place the enclosing player's keep in it",
                                 where))
        elif len(colours) > 1:
            found.append(Finding("C2", VIOLATION,
                                 f"courtyard {yard.id} is claimed by {' and '.join(colours)}; a courtyard belongs to one player",
                                 where))
        elif len(keeps) > 1:
            found.append(Finding("C2", WARNING,
                                 f"courtyard {yard.id} holds {len(keeps)} keeps of {colours[0]}; one claims it", where))
    return found


def double_keeps(castle: Castle, keeps_by_yard: dict[int, list[Keep]]) -> list[Finding]:
    """At most one Double Keep per colour in the castle (C5, and C6 after a division)."""
    claimed = [k for ks in keeps_by_yard.values() for k in ks]
    found = []
    for colour, n in sorted(Counter(k.colour for k in claimed if k.double).items()):
        if n > 1:
            found.append(Finding("C5", VIOLATION,
                                 f"{colour} has {n} Double Keeps; a player may build one per game (C5), and a divided one stays double on one side only (C6)",
                                 tuple(k.at for k in claimed if k.double and k.colour == colour)))
    return found


def piece_counts(castle: Castle) -> list[Finding]:
    """Pieces against the sets in play: more than the boxes hold is impossible, fewer is an unfinished game."""
    sets = castle.sets_in_play
    box = f"{sets} set{'s' if sets > 1 else ''}"
    found, unused = [], []
    for name, left in castle.pieces_left().items():
        limit = GREY_PIECES_PER_SET[name] * sets
        if left < 0:
            found.append(Finding(COMPONENTS, VIOLATION, f"{limit - left} {name} but {box} hold only {limit}"))
        elif left > 0:
            unused.append(f"{left} {name}")
    if unused and not castle.is_empty:
        found.append(Finding(COMPONENTS, WARNING,
                             f"{', '.join(unused)} of {box} are not in the castle; a finished game uses every grey piece"))
    keep_pieces = Counter()
    for k in castle.keeps:
        keep_pieces[k.colour] += k.pieces
    for colour, n in sorted(keep_pieces.items()):
        if n > KEEPS_PER_COLOUR:
            found.append(Finding("C8", NOTICE,
                                 f"{colour} has {n} keep pieces on the table, more than the {KEEPS_PER_COLOUR} in a box: the extra ones stand in as markers"))
    if castle.players is not None:
        for colour in sorted({k.colour for k in castle.keeps} - set(castle.players)):
            found.append(Finding(COMPONENTS, VIOLATION, f"{colour} keeps are on the table but {colour} is not among the players"))
    return found


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.rule, f.message))


def geometry_findings(castle: Castle) -> list[Finding]:
    """Everything about the grey pieces alone."""
    return overlaps(castle) + blocked_ends(castle) + separate_castles(castle) + loose_ends(castle)
