"""A judge's move check: what one player added between two states of the castle, and whether the
turn was legal (rules.md T1-T3, C2, C3, C5), each breach with its rule id."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from . import findings as rules
from .align import Alignment, align
from .castle import Castle, Keep, Point, Wall, cells_around, cells_beside
from .courtyards import Courtyard, find_courtyards
from .findings import VIOLATION, Finding
from .score import keeps_by_courtyard, owner_of

MOVE_FORMAT = "castellan-move/1"


@dataclass(frozen=True)
class MoveCheck:
    player: str
    added_towers: tuple[Point, ...]
    added_walls: tuple[Wall, ...]
    added_keeps: tuple[Keep, ...]
    removed_towers: tuple[Point, ...]
    removed_walls: tuple[Wall, ...]
    removed_keeps: tuple[Keep, ...]
    findings: tuple[Finding, ...]
    alignment: Alignment = Alignment()  # how the castle before was moved into the frame of the one after

    @property
    def legal(self) -> bool:
        return not any(f.severity == VIOLATION for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        def pieces(towers, walls, keeps) -> dict[str, Any]:
            return {"towers": [list(t) for t in towers], "walls": [w.to_json() for w in walls],
                    "keeps": [k.to_json() for k in keeps]}

        return {
            "format": MOVE_FORMAT,
            "player": self.player,
            "legal": self.legal,
            "added": pieces(self.added_towers, self.added_walls, self.added_keeps),
            "removed": pieces(self.removed_towers, self.removed_walls, self.removed_keeps),
            "findings": [f.to_json() for f in self.findings],
            "alignment": self.alignment.to_json(),
        }


def _difference(after: tuple, before: tuple) -> tuple:
    extra = Counter(after) - Counter(before)
    return tuple(sorted(extra.elements()))


def _match_keeps(before_claims: list[tuple[Keep, Courtyard]], after_claims: list[tuple[Keep, Courtyard]]):
    """Pair each keep that stood before with one after it: same colour and height, in the same courtyard
    or a part of it (a keep may be moved inside its courtyard, C4, and a courtyard may be divided, C3)."""
    unmatched_after = list(after_claims)
    removed = []
    for keep, yard in before_claims:
        match = next((a for a in unmatched_after
                      if a[0].colour == keep.colour and a[0].double == keep.double and a[1].cells <= yard.cells), None)
        if match is None:
            removed.append((keep, yard))
        else:
            unmatched_after.remove(match)
    return unmatched_after, removed


def _inside_foreign_courtyard(towers, walls, yards: list[Courtyard], claimed, player: str) -> list[Finding]:
    """T3: a piece built inside a courtyard that another player has claimed."""
    found = []
    for yard in yards:
        owner = owner_of(claimed.get(yard.id, []))
        if owner is None or owner == player:
            continue
        for t in towers:
            if all(c in yard.cells for c in cells_around(t)):
                found.append(Finding("T3", VIOLATION, f"tower at [{t[0]}, {t[1]}] is built inside {owner}'s courtyard {yard.id}", (t,)))
        for w in walls:
            if any(c in yard.cells for e in w.unit_edges() for c in cells_beside(e)):
                found.append(Finding("T3", VIOLATION, f"the {w} is built inside {owner}'s courtyard {yard.id}", w.ends))
    return found


def check_move(before: Castle, after: Castle, player: str) -> MoveCheck:
    """What `player` added between two states, and every rule the turn broke. The two castles may be
    in different lattice frames (two photos from different sides): `before` is aligned to `after`."""
    alignment = align(before, after)
    before = alignment.apply(before)
    added_towers = _difference(after.towers, before.towers)
    added_walls = _difference(after.walls, before.walls)
    removed_towers = _difference(before.towers, after.towers)
    removed_walls = _difference(before.walls, after.walls)
    found: list[Finding] = []

    for t in removed_towers:
        found.append(Finding("T1", VIOLATION, f"the tower at [{t[0]}, {t[1]}] was removed; pieces are only ever added", (t,)))
    for w in removed_walls:
        found.append(Finding("T1", VIOLATION, f"the {w} was removed; pieces are only ever added", w.ends))
    if not added_towers and not added_walls:
        found.append(Finding("T1", VIOLATION, f"{player} built nothing; a turn plays at least one card and builds its pieces"))

    # Connection: the first turn's pieces hang together around a tower (T2); later ones join the castle (G6).
    if before.is_empty:
        if (added_towers or added_walls) and not added_towers:
            found.append(Finding("T2", VIOLATION, "the first turn must build at least one tower"))
        if len(rules.castle_parts(after)) > 1:
            found.append(Finding("T2", VIOLATION, "the pieces of the first turn must all connect to each other"))
    else:
        old_points = set(before.towers) | {p for w in before.walls for p in w.points()}
        for part in rules.castle_parts(after):
            if not part & old_points:
                found.append(Finding("G6", VIOLATION,
                                     f"pieces near [{min(part)[0]}, {min(part)[1]}] are not connected to the castle; nobody may start a second castle",
                                     tuple(sorted(part))))

    yards_before, yards_after = find_courtyards(before), find_courtyards(after)
    claimed_before = keeps_by_courtyard(before, yards_before)
    claimed_after = keeps_by_courtyard(after, yards_after)
    found += _inside_foreign_courtyard(added_towers, added_walls, yards_before, claimed_before, player)

    # Keeps: who placed what, and where.
    by_id_before = {y.id: y for y in yards_before}
    by_id_after = {y.id: y for y in yards_after}
    before_claims = [(k, by_id_before[i]) for i, ks in claimed_before.items() for k in ks]
    after_claims = [(k, by_id_after[i]) for i, ks in claimed_after.items() for k in ks]
    new_claims, removed_claims = _match_keeps(before_claims, after_claims)
    added_keeps = tuple(k for k, _ in new_claims)
    removed_keeps = tuple(k for k, _ in removed_claims)

    old_cell_sets = {y.cells for y in yards_before}
    new_yards = [y for y in yards_after if y.cells not in old_cell_sets]
    new_yard_ids = {y.id for y in new_yards}

    for keep, yard in new_claims:
        if keep.colour != player:
            found.append(Finding("T1", VIOLATION, f"a {keep.colour} keep was placed in courtyard {yard.id} during {player}'s turn", (keep.at,)))
    for keep, yard in removed_claims:
        upgraded = keep.colour == player and not keep.double and any(
            k.colour == player and k.double and y.cells <= yard.cells for k, y in new_claims)
        if upgraded:
            found.append(Finding("C5", VIOLATION,
                                 f"{player}'s keep in courtyard {yard.id} was made a Double Keep; a courtyard claimed with a single keep can never be upgraded",
                                 (keep.at,)))
        else:
            found.append(Finding("T1", VIOLATION, f"the {keep} was taken away; keeps stay in their courtyards", (keep.at,)))

    for yard in new_yards:
        owner = owner_of(claimed_after.get(yard.id, []))
        divided = any(yard.cells < old.cells and owner_of(claimed_before.get(old.id, [])) == player for old in yards_before)
        rule = "C3" if divided else "C2"
        what = "divided off" if divided else "enclosed"
        if owner != player:
            held = f"is claimed by {owner}" if owner else "is not claimed"
            found.append(Finding(rule, VIOLATION,
                                 f"courtyard {yard.id} ({len(yard.towers)} towers), {what} this turn, {held}: {player} must place a keep in it",
                                 tuple(sorted(yard.cells))))

    new_doubles = [(k, y) for k, y in new_claims if k.double and k.colour == player]
    had_double = any(k.double and k.colour == player for k, _ in before_claims)
    if new_doubles and (had_double or len(new_doubles) > 1):
        found.append(Finding("C5", VIOLATION, f"{player} builds a second Double Keep; the Double Keep is once per game",
                             tuple(k.at for k, _ in new_doubles)))
    for keep, yard in new_doubles:
        if yard.id not in new_yard_ids:
            found.append(Finding("C5", VIOLATION,
                                 f"the Double Keep in courtyard {yard.id} was not placed with a new claim; it is only built when a new keep is placed",
                                 (keep.at,)))

    # Geometry the turn broke (anything already wrong before is not this player's doing).
    known = {(f.rule, f.message) for f in rules.geometry_findings(before)}
    found += [f for f in rules.geometry_findings(after) if f.severity == VIOLATION and (f.rule, f.message) not in known]

    return MoveCheck(player, added_towers, added_walls, added_keeps, removed_towers, removed_walls, removed_keeps,
                     tuple(rules.sort_findings(found)), alignment)
