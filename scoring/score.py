"""Scoring a castle (rules.md S2-S5) together with everything it shows against the rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import findings as rules
from .castle import Castle, Keep
from .courtyards import Courtyard, courtyard_at, find_courtyards
from .findings import Finding

SCORE_FORMAT = "castellan-score/1"


@dataclass(frozen=True)
class CourtyardScore:
    courtyard: Courtyard
    owner: str | None  # None when unclaimed, or claimed by more than one colour
    double: bool
    keeps: tuple[Keep, ...]

    @property
    def towers(self) -> int:
        return len(self.courtyard.towers)

    @property
    def points(self) -> int:
        """S2: one point per tower around it; S3: doubled for a Double Keep; nothing for nobody."""
        if self.owner is None:
            return 0
        return self.towers * (2 if self.double else 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.courtyard.id,
            "owner": self.owner,
            "double": self.double,
            "towers": self.towers,
            "points": self.points,
            "cells": [list(c) for c in sorted(self.courtyard.cells)],
            "tower_points": [list(t) for t in sorted(self.courtyard.towers)],
        }


@dataclass(frozen=True)
class PlayerScore:
    colour: str
    score: int
    keeps: int  # keep pieces claiming courtyards; a Double Keep counts two (S5)
    courtyards: int

    def to_json(self) -> dict[str, Any]:
        return {"score": self.score, "keeps": self.keeps, "courtyards": self.courtyards}


@dataclass(frozen=True)
class Score:
    castle: Castle
    courtyards: tuple[CourtyardScore, ...]
    players: tuple[PlayerScore, ...]
    winners: tuple[str, ...]
    findings: tuple[Finding, ...]

    def player(self, colour: str) -> PlayerScore:
        return next(p for p in self.players if p.colour == colour)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": SCORE_FORMAT,
            "players": {p.colour: p.to_json() for p in self.players},
            "winners": list(self.winners),
            "courtyards": [c.to_json() for c in self.courtyards],
            "findings": [f.to_json() for f in self.findings],
            "castle": self.castle.to_json(),
        }


def owner_of(keeps: list[Keep] | tuple[Keep, ...]) -> str | None:
    """Who owns a courtyard with these keeps in it: their one colour; nobody when unclaimed or when
    two colours claim it (C2)."""
    colours = {k.colour for k in keeps}
    return colours.pop() if len(colours) == 1 else None


def keeps_by_courtyard(castle: Castle, courtyards: list[Courtyard]) -> dict[int, list[Keep]]:
    """Which keeps claim which courtyard; a keep outside every courtyard is supply (not listed)."""
    out: dict[int, list[Keep]] = {}
    for k in castle.keeps:
        yard = courtyard_at(k.at, courtyards)
        if yard is not None:
            out.setdefault(yard.id, []).append(k)
    return out


def winners(players: list[PlayerScore]) -> tuple[str, ...]:
    """Highest score; a tie goes to the most keeps in the castle; still tied, the victory is shared (S5)."""
    if not players:
        return ()
    best = max((p.score, p.keeps) for p in players)
    return tuple(p.colour for p in players if (p.score, p.keeps) == best)


def score_castle(castle: Castle) -> Score:
    courtyards = find_courtyards(castle)
    claimed = keeps_by_courtyard(castle, courtyards)

    yard_scores = []
    for yard in courtyards:
        keeps = tuple(claimed.get(yard.id, ()))
        owner = owner_of(keeps)
        yard_scores.append(CourtyardScore(yard, owner, owner is not None and any(k.double for k in keeps), keeps))

    players = []
    for colour in castle.colours_in_play:
        owned = [y for y in yard_scores if y.owner == colour]
        keep_pieces = sum(k.pieces for y in owned for k in y.keeps)
        players.append(PlayerScore(colour, sum(y.points for y in owned), keep_pieces, len(owned)))

    found = (
        rules.geometry_findings(castle)
        + rules.keeps_on_pieces(castle)
        + rules.claims(courtyards, claimed)
        + rules.double_keeps(castle, claimed)
        + rules.piece_counts(castle)
    )
    return Score(castle, tuple(yard_scores), tuple(players), winners(players), tuple(rules.sort_findings(found)))

