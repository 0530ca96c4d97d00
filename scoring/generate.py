"""A random game of Castellan played by the rules, for tests, benchmarks and the photo renderer.

Each turn the player takes a few grey pieces from the boxes in play, builds every one that can be
placed legally (connected to the castle, G1-G5, never inside another player's courtyard, T3) and hands
the rest to the next player (T4); then claims every courtyard the turn enclosed or divided with a keep
(C2, C3), stacking a Double Keep once per game (C5). Placements near the middle of the castle are
preferred so finished castles are compact, as real ones are.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .castle import (
    COLOURS,
    LONG_WALLS_PER_SET,
    SHORT_WALLS_PER_SET,
    TOWERS_PER_SET,
    Castle,
    Keep,
    Point,
    Wall,
    cells_around,
    cells_beside,
)
from .courtyards import Courtyard, courtyard_at, find_courtyards

DIRECTIONS: tuple[Point, ...] = ((1, 0), (-1, 0), (0, 1), (0, -1))


@dataclass(frozen=True)
class Turn:
    player: str
    castle: Castle  # the castle after this turn


class _Game:
    def __init__(self, rng: random.Random, players: list[str], sets: int, double_keep_chance: float):
        self.rng = rng
        self.players = players
        self.sets = sets
        self.double_keep_chance = double_keep_chance
        self.towers: set[Point] = set()
        self.walls: list[Wall] = []
        self.edges: set[tuple[Point, Point]] = set()
        self.middles: set[Point] = set()
        self.wall_ends: set[Point] = set()
        self.keeps: list[Keep] = []
        self.foreign_cells: dict[Point, str] = {}  # cell -> owner, for T3
        self.double_used: set[str] = set()
        self.courtyard_cells: set[frozenset] = set()

    def castle(self) -> Castle:
        return Castle(tuple(sorted(self.towers)), tuple(sorted(self.walls)), tuple(self.keeps),
                      players=tuple(self.players), sets=self.sets)

    # --- where a piece may go -------------------------------------------------------------
    def _centre(self) -> tuple[float, float]:
        pts = list(self.towers) or [(0, 0)]
        return (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts))

    def _foreign(self, cells, player: str) -> bool:
        return any(self.foreign_cells.get(c, player) != player for c in cells)

    def tower_sites(self, player: str) -> list[Point]:
        if not self.towers and not self.walls:
            return [(0, 0)]
        return [p for p in self.wall_ends
                if p not in self.towers and p not in self.middles
                and not all(self.foreign_cells.get(c, player) != player for c in cells_around(p))]

    def wall_sites(self, length: int, player: str) -> list[Wall]:
        sites = []
        for t in self.towers:
            for dx, dy in DIRECTIONS:
                end = (t[0] + length * dx, t[1] + length * dy)
                wall = Wall.between(t, end)
                edges = wall.unit_edges()
                if any(e in self.edges for e in edges) or end in self.middles:
                    continue
                mid = wall.middle
                if mid is not None and (mid in self.towers or mid in self.wall_ends or mid in self.middles):
                    continue
                if self._foreign([c for e in edges for c in cells_beside(e)], player):
                    continue
                sites.append(wall)
        return sites

    def _pick(self, sites: list, where) -> object | None:
        if not sites:
            return None
        cx, cy = self._centre()
        weights = [math.exp(-0.9 * math.dist(where(s), (cx, cy))) for s in sites]
        return self.rng.choices(sites, weights=weights)[0]

    def place(self, piece: str, player: str) -> bool:
        if piece == "tower":
            site = self._pick(self.tower_sites(player), lambda p: p)
            if site is None:
                return False
            self.towers.add(site)
            return True
        wall = self._pick(self.wall_sites(1 if piece == "short" else 2, player),
                          lambda w: ((w.a[0] + w.b[0]) / 2, (w.a[1] + w.b[1]) / 2))
        if wall is None:
            return False
        self.walls.append(wall)
        self.edges.update(wall.unit_edges())
        self.wall_ends.update(wall.ends)
        if wall.middle is not None:
            self.middles.add(wall.middle)
        return True

    # --- claims at the end of a turn --------------------------------------------------------
    def claim(self, player: str) -> None:
        yards = find_courtyards(self.castle())
        for yard in yards:
            if yard.cells in self.courtyard_cells:
                continue
            if any(courtyard_at(k.at, [yard]) for k in self.keeps):
                continue  # the part of a divided courtyard that keeps the old keep (C3)
            self.keeps.append(self._new_keep(yard, player))
        self.courtyard_cells = {y.cells for y in yards}
        self.foreign_cells = {}
        for yard in yards:
            owner = next(k.colour for k in self.keeps if courtyard_at(k.at, [yard]))
            self.foreign_cells.update((c, owner) for c in yard.cells)

    def _new_keep(self, yard: Courtyard, player: str) -> Keep:
        cx, cy = self.rng.choice(sorted(yard.cells))
        at = (round(cx + 0.5 + self.rng.uniform(-0.1, 0.1), 3), round(cy + 0.5 + self.rng.uniform(-0.1, 0.1), 3))
        double = player not in self.double_used and self.rng.random() < self.double_keep_chance
        if double:
            self.double_used.add(player)
        return Keep(player, at, double)


def play_random_game(seed: int | random.Random, players: list[str] | None = None, *, sets: int | None = None,
                     double_keep_chance: float = 0.25) -> list[Turn]:
    """Play a whole game with random legal turns; return the castle after every turn."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    if players is None:
        players = list(COLOURS[: rng.choice((2, 3, 4))])
    if not 2 <= len(players) <= 4 or any(p not in COLOURS for p in players) or len(set(players)) != len(players):
        raise ValueError(f"players: expected 2 to 4 different colours from {', '.join(COLOURS)}, got {players}")
    sets = sets or (1 if len(players) <= 2 else 2)
    pool = (["tower"] * TOWERS_PER_SET + ["short"] * SHORT_WALLS_PER_SET + ["long"] * LONG_WALLS_PER_SET) * sets
    rng.shuffle(pool)
    pool.insert(0, pool.pop(pool.index("tower")))  # T2: the first turn builds a tower

    game = _Game(rng, players, sets, double_keep_chance)
    turns: list[Turn] = []
    handed: list[str] = []  # pieces handed on to the next player (T4)
    idle_turns = 0
    turn_no = 0
    # Stop when the boxes are empty and a whole round could build nothing of what was handed on.
    while pool or (handed and idle_turns < len(players)):
        player = players[turn_no % len(players)]
        turn_no += 1
        hand = handed + [pool.pop(0) for _ in range(min(len(pool), rng.randint(2, 4)))]
        handed = []
        built = 0
        while hand:
            piece = next((p for p in hand if game.place(p, player)), None)
            if piece is None:
                break
            hand.remove(piece)
            built += 1
        handed = hand
        if built:
            game.claim(player)
            turns.append(Turn(player, game.castle()))
            idle_turns = 0
        else:
            idle_turns += 1
    return turns


def random_finished_castle(seed: int | random.Random, players: list[str] | None = None, **options) -> Castle:
    """The castle at the end of a random legal game (see play_random_game)."""
    return play_random_game(seed, players, **options)[-1].castle
