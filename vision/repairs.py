"""The rules as a repair of a fitted castle (rules.md): the steps that add, drop or complete towers and
walls where the fit's reading breaks a rule the photo cannot settle, choose each colour's Double Keep, and
drop keeps that cannot all stand as read; and the castle built from a fit.

Each step changes the fit's decision in place and returns notes (castellan-score/1 findings) saying what it
decided and why, so a player sees every piece the rules, not the pixels, put there. `resolve_with_rules`
runs the steps that follow from the rules alone, `settle_with_the_counts` those that also use the boxes'
piece counts.
`make_plausibility` is the rules' and the boxes' prior for the fit itself (vision.reconstruct.fit_castle).
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace

import numpy as np
from shapely.geometry import MultiPoint, Point

from scoring import Castle, Keep, Wall, score_castle
from scoring.castle import EDITIONS, GREY_PIECES_PER_SET, KEEPS_PER_COLOUR, LONG_WALLS_PER_SET, SHORT_WALLS_PER_SET, TOWERS_PER_SET
from scoring.courtyards import find_courtyards
from scoring.findings import walls_ending_under_long_walls
from scoring.score import keeps_by_courtyard
from vision.keeps import (BIGGER_THAN_ITS_COLOUR, DOUBLE_LEAD, HEIGHT_CAP, ITS_COLOUR_ALL_LOOK_STACKED, SINGLE_BESIDE_ITS_DOUBLE,
                          STACKED_BY_A_SMALL_LEAD, TALLER_THAN_ITS_COLOUR, FoundKeep, shape_confidence)
from vision.reconstruct import Dims, Fit, box_pixels

PIECE_MARGIN = 0.1
# A wall the pixel models see only faintly (a lone wall at the castle's edge) still shows plastic clearly
# above the table strip beside it: evidence this much above the strip's (extend_walls_from_towers has
# the measurements; as evidence is at least -1, such a step's own is above -0.4, never plain table).
WALL_CONTRAST = 0.6
# A keep read double counts as read surely only from this confidence: a Double Keep doubles a courtyard's points,
# and keeps read double by their outline are single far more often than keeps read weakly otherwise (about 1 in 14).
# Over the readings of dev unseen26 and unseen27 (350 photos, session 27; 466 keeps read double by outline), those read
# at 0.5-0.7 were single 10 times of 38 (two answers wrong, at 1.0 and 0.85, from one of them each), at 0.7-0.9 7 of 40,
# at 0.9 or more 16 of 271; below 0.5 (weighed as doubts since session 20, when 24 of 138 were single) 63 of 117.
DOUBLE_SURE = 0.7
# On 66 development photos (the 28 read at 0.5 or more in the earlier sets, and seeds 170000-170039,
# read at the nominal keep size) a Double Keep's blob was 1.62 times a single keep's (medians of 97 and
# 829 keeps, each over a single keep's silhouette there); a keep this many times its colour's others is
# nearer, in ratio, to stacked than to single (sqrt 1.62).
DOUBLE_FILL_DOUBT = 1.27


def build_castle(fit: Fit, keeps: list[FoundKeep]):
    """Turn the decided sites and edges into a scoring.Castle (long walls where no tower splits a run)."""
    towers = _decided_towers(fit)
    edges = sorted(el.key for el, a in zip(fit.elements, fit.decision.active) if a and el.kind == "edge")
    edge_set, used, walls = set(edges), set(), []
    for p, q in edges:
        if (p, q) in used:
            continue
        used.add((p, q))
        d = (q[0] - p[0], q[1] - p[1])
        nxt = (q, (q[0] + d[0], q[1] + d[1]))
        if q not in towers and q not in fit.open_joints and nxt in edge_set and nxt not in used:
            used.add(nxt)
            walls.append(Wall.between(p, nxt[1]))
        else:
            walls.append(Wall.between(p, q))
    # Translate so the castle starts at (0, 0): the lattice origin is arbitrary.
    ox, oy, _, _ = Castle(towers=tuple(towers), walls=tuple(walls)).bounds()
    sh = lambda p: (p[0] - ox, p[1] - oy)  # noqa: E731
    castle = Castle(
        towers=tuple(sorted(sh(t) for t in towers)),
        walls=tuple(sorted(Wall.between(sh(w.a), sh(w.b)) for w in walls)),
        keeps=tuple(Keep(k.colour, (round(k.at[0] - ox, 3), round(k.at[1] - oy, 3)), k.double) for k in keeps),
    )
    return castle, (ox, oy)


def in_castle_frame(notes: list[dict], offset: tuple[int, int]) -> list[dict]:
    """The reader's notes with their lattice points moved into the castle's frame.

    The rule steps name points on the fitted lattice, whose origin is arbitrary; the castle a reading
    gives (and the rules engine's findings on it) starts at (0, 0) (build_castle's `offset`). A note
    must name the point the player finds in the castle and on the overlay.
    """
    ox, oy = offset
    moved = lambda m: f"[{int(m.group(1)) - ox}, {int(m.group(2)) - oy}]"  # noqa: E731
    return [note | {"message": re.sub(r"\[(-?\d+), (-?\d+)\]", moved, note["message"])} for note in notes]


def _rule_problems(castle) -> int:
    """How many rule violations (and missing pieces of a finished game) a reconstruction has."""
    found = score_castle(castle).findings
    return sum(1 for f in found if f.severity == "violation" or (f.rule == "components" and f.severity == "warning"))


def _decided_towers(fit: Fit) -> set[tuple[int, int]]:
    """The lattice points where a tower is decided."""
    return {el.key for el, a in zip(fit.elements, fit.decision.active) if a and el.kind == "tower"}


def _walls_at(fit: Fit) -> dict[tuple[int, int], list[int]]:
    """Per lattice point, the decided walls (element indices) ending there."""
    walls: dict[tuple[int, int], list[int]] = {}
    for i, (el, a) in enumerate(zip(fit.elements, fit.decision.active)):
        if a and el.kind == "edge":
            for end in el.key:
                walls.setdefault(end, []).append(i)
    return walls


def _wall_directions(fit: Fit) -> dict[tuple[int, int], dict[tuple[int, int], int]]:
    """Per lattice point, the decided walls leaving it: direction -> element index."""
    out: dict[tuple[int, int], dict[tuple[int, int], int]] = {}
    for point, walls in _walls_at(fit).items():
        for i in walls:
            p, q = fit.elements[i].key
            far = q if p == point else p
            out.setdefault(point, {})[(far[0] - point[0], far[1] - point[1])] = i
    return out


def _wall_ends(fit: Fit) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Per lattice point, the directions in which decided walls leave it."""
    return {point: list(dirs) for point, dirs in _wall_directions(fit).items()}


def _straight_through(dirs: list[tuple[int, int]]) -> bool:
    """Exactly two walls, in line: where a long wall passes (or a tower joins two walls in line)."""
    return len(dirs) == 2 and dirs[0] == (-dirs[1][0], -dirs[1][1])


def _ends_free(dirs: list[tuple[int, int]], along: tuple[int, int]) -> bool:
    """A wall leaving a point without a tower `along` ends free there: no other wall leaves the point
    (`dirs`, which may hold `along` itself), or one other that runs across it, their free ends meeting at
    a right angle, each waiting for the tower that never came (G4 only asks that one could stand there;
    nothing joins wall to wall). Finished games hold such corners: 851 among the 7,282 towerless points
    where walls end in the 380 renders on disk in session 29. (A point two walls pass in line is a long
    wall's middle or an open joint: no wall may end there, G4.)"""
    others = [d for d in dirs if d != along]
    return not others or (len(others) == 1 and others[0][0] * along[0] + others[0][1] * along[1] == 0)


def _faint_walls_across_a_run(fit: Fit, dirs: dict[tuple[int, int], int], barely: float = PIECE_MARGIN) -> bool:
    """Two of the walls leaving a point (`dirs`, as _wall_directions gives them) pass it in line and every
    other one is barely seen: the run may be one long wall, and the walls across it a strip of table
    between parallel walls read as plastic."""
    for run in (((1, 0), (-1, 0)), ((0, 1), (0, -1))):
        across = [i for d, i in dirs.items() if d not in run]
        if all(d in dirs for d in run) and across and all(fit.decision.margin[i] < barely for i in across):
            return True
    return False


def add_required_towers(fit: Fit, max_doubt: float = 0.35) -> list[dict]:
    """Towers the walls say must be there: walls connect only to towers (G1).

    Wherever decided walls meet other than as the two halves of one long wall (a corner, a T, a
    crossing), a tower stands. A tower the photo barely shows there (hidden behind a wall in an
    oblique view) is read as present, and said so; one the photo clearly rules out is left for the
    self-check to report. Where two walls pass in line and every wall across them is barely seen too,
    no tower is added: one long wall with a strip of table beside it read as faint walls is likelier
    than two unseen pieces, and drop_walls_at_blocked_ends then settles the walls across.
    """
    walls_from = _wall_directions(fit)
    notes = []
    for i, (el, active) in enumerate(zip(fit.elements, fit.decision.active)):
        walls = walls_from.get(el.key, {}) if el.kind == "tower" else {}
        if active or not walls:
            continue
        # (A margin is the evidence for the decision taken: a large one means clearly no tower.)
        if len(walls) < 2 or _straight_through(list(walls)) or fit.decision.margin[i] > max_doubt:
            continue
        if _faint_walls_across_a_run(fit, walls):
            continue  # a long wall's middle with faint walls across: drop_walls_at_blocked_ends decides
        fit.decision.active[i] = True
        notes.append({"rule": "G1", "severity": "notice",
                      "message": f"walls meet at {list(el.key)}, so a tower stands there although the photo barely shows it"})
    return notes


def add_towers_at_free_ends(fit: Fit, keeps: list[FoundKeep], max_margin: float = 0.0, max_missing: int = 4) -> list[dict]:
    """A tower at the free end of a decided wall is read as present while the boxes in play have towers the
    castle does not use (a finished game uses them all), most favoured first: one whose pixels favour it,
    and with `max_margin` above nil, in a castle at most `max_missing` towers short, one the photo barely
    rules out (margin under it).

    The decision charges every piece a small cost per pixel (reconstruct.icm's prior), so a tower seen
    only in part, its sides in shade at the castle's edge, can stay out although its pixels speak for
    it. At a wall's free end a tower is what the rules expect (G1, G4): on the 100 photos of dev
    unseen19a with the lattice right, such towers (evidence for them, margin under 0) stood there 19
    times of 22, against 13 of 30 for the ones the evidence barely ruled out (margin 0 to 0.1), which
    stay out on the first pass. Without the count, on dev unseen20 they added more wrong towers than right ones.
    Once the walls' count is the castle's (settle_with_the_counts) the count picks among those too: a tower a
    wall's end plainly shows can be ruled out by its pixels where the wall's box, drawn over the whole
    lattice step, already explains its top (unseen55 h553555_017, a tower on a stub wall's end seen from
    84 degrees, margin 0.26). (Drawing walls' boxes between tower faces in the decision itself, the general
    remedy, was tried in session 7 and dropped: where a long wall's middle was left unexplained the decision took
    towers there, tower precision at 35-70 degrees .933 -> .870 with the renders' true masks.) Over unseen55-60's
    last rule step (511 development readings at 35-90 degrees, session 74), of the free-end towers under 0.1
    that a reading short of towers would take so, weakest first up to the count, 32 of 40 stood there in
    castles at most four towers short, 57 of 102 in castles shorter (there the lattice or much else is often
    wrong: on unseen55-57, taken there too, such readings lost 1 to 5 more pieces each). A tower taken against
    the photo is read for the count (Fit.counted_against_photo): uncertain in the confidence, and the exact
    count no longer vouches for the reading."""
    tower_at = {el.key: i for i, el in enumerate(fit.elements) if el.kind == "tower"}
    candidates = []
    for point, dirs in _wall_directions(fit).items():
        i = tower_at.get(point) if len(dirs) == 1 else None
        if i is not None and not fit.decision.active[i] and fit.decision.margin[i] < max_margin:
            candidates.append((float(fit.decision.margin[i]), point, i))
    if not candidates:
        return []
    short = build_castle(fit, keeps)[0].pieces_left()["towers"]
    if short > max_missing:
        candidates = [c for c in candidates if c[0] < 0]  # only those its pixels favour
    notes = []
    for m, point, i in sorted(candidates)[:max(0, short)]:
        if m >= 0:
            _read_for_the_count(fit, i)
            notes.append({"rule": "components", "severity": "notice",
                          "message": f"the castle is short of towers; the tower at {list(point)}, where a wall ends and "
                                     "which the photo does not clearly rule out, was read as present"})
        else:
            fit.decision.active[i] = True
            notes.append({"rule": "G1", "severity": "notice",
                          "message": f"a wall ends at {list(point)} and the photo shows a little more for a tower there "
                                     "than against one; read as present"})
    return notes


def _read_for_the_count(fit: Fit, i: int) -> None:
    """Element `i` read as present because the boxes' count asks for it, against what the photo shows: uncertain
    in the confidence (margin nil), and the reading's exact count no longer vouches for it (Fit.counted_against_photo)."""
    fit.decision.active[i], fit.decision.margin[i] = True, 0.0
    fit.counted_against_photo.add(i)


def drop_walls_at_blocked_ends(fit: Fit, barely: float = PIECE_MARGIN) -> list[dict]:
    """Where three or four walls meet at a lattice point and the photo shows no tower there, one of them
    was misread: walls connect only to towers (G1), and a wall ending under a long wall's middle can
    never take one (G4, G5). The walls there that the photo barely shows (margin under `barely`) are
    read as absent, weakest first, until at most two remain; a conflict between walls seen clearly is
    left for the self-check to report.

    Seen obliquely, the narrow strips of table between parallel walls look like plastic (the near
    wall's leaning top and the far wall's face fill them), and a short wall across such a strip explains
    those pixels; it then ends under the middle of a long wall that the photo shows plainly (on sample
    photo_010 the 10 such walls had margins of 0 to 0.07 against 0.36 to 0.95 for the walls they met).
    Towers the walls call for and the photo does not rule out were added before (add_required_towers),
    except in a run of two walls with only faint walls across it.
    """
    active, margin = fit.decision.active, fit.decision.margin
    towers = _decided_towers(fit)
    notes = []
    for point, walls in sorted(_walls_at(fit).items()):
        walls = [i for i in walls if active[i]]  # (a wall read as absent at its other end is gone)
        if point in towers or len(walls) < 3:
            continue
        for i in sorted(walls, key=lambda i: margin[i])[:len(walls) - 2]:
            if margin[i] >= barely:
                break
            active[i] = False
            a, b = fit.elements[i].key
            notes.append({"rule": "G4", "severity": "notice",
                          "message": f"{len(walls)} walls meet at {list(point)} where the photo shows no tower; the one "
                                     f"least clearly seen, {list(a)}-{list(b)}, was read as absent"})
    return notes


def drop_walls_across_long_walls(fit: Fit, keeps: list[FoundKeep]) -> list[dict]:
    """A short wall ending under the middle of a long wall can never stand there (G4, G5): it is read as
    absent however clearly the photo seemed to show it, and counts as uncertain in the confidence;
    unless the castle holds more long walls than its boxes, and room for two more short walls: then the
    long wall is read as two short walls meeting the third at that point with no tower (G1: legal, a
    notice), which the piece counts say is the likelier misread.

    Such a reading is always a misread, and nearly always of the short wall: on the 200 development
    renders of unseen26, the readings' 81 such violations had the short wall wrong in 79 (a strip of
    table between parallel walls, or the top of a wall leaning over it, read as plastic; margins up to
    the photo's clearest) and the long wall wrong in 11. Run after open_joints: which walls in line make
    one long wall is only known then. (The split by the counts: on dev27, 80 renders of unseen27's seeds,
    one reading changed, photo_030, whose grey-piece errors went 5 -> 1.)
    """
    edge_at = {el.key: i for i, el in enumerate(fit.elements) if el.kind == "edge"}  # (keys ordered as Wall's ends)
    notes = []
    while True:
        castle, (ox, oy) = build_castle(fit, keeps)  # (the keeps say how many sets are in play)
        conflicts = [(w, end, long_wall) for w, end, long_wall in walls_ending_under_long_walls(castle) if w.length == 1]
        if not conflicts:
            return notes
        w, end, long_wall = conflicts[0]
        left = castle.pieces_left()
        a, b, end = (w.a[0] + ox, w.a[1] + oy), (w.b[0] + ox, w.b[1] + oy), (end[0] + ox, end[1] + oy)
        if left["long walls"] < 0 and left["short walls"] >= 2:
            fit.open_joints.add(end)
            la, lb = (long_wall.a[0] + ox, long_wall.a[1] + oy), (long_wall.b[0] + ox, long_wall.b[1] + oy)
            half = edge_at[tuple(sorted([la, end]))]
            fit.decision.margin[half] = 0.0  # the joint was decided by the counts: one uncertain decision
            notes.append({"rule": "G4", "severity": "notice",
                          "message": f"a long wall seen at {list(la)}-{list(lb)} would block the short wall {list(a)}-{list(b)}, "
                                     f"and the boxes in play hold {-left['long walls']} long wall(s) fewer than read: read as two "
                                     f"short walls meeting at {list(end)} with no tower (check it on the table)"})
            continue
        i = edge_at[(a, b)]
        fit.decision.active[i] = False
        fit.decision.margin[i] = 0.0  # decided by the rules, against what the photo seemed to show
        notes.append({"rule": "G4", "severity": "notice",
                      "message": f"a short wall seen at {list(a)}-{list(b)} would end under the middle of a long wall at "
                                 f"{list(end)}, where no tower can stand: read as absent (check it on the table)"})


# The most of a wall's silhouette outside the other decided pieces' for the view to hide it (join_hidden_walls).
HIDDEN_WALL_FREE = 0.15


def join_hidden_walls(fit: Fit, keeps: list[FoundKeep], max_free: float = HIDDEN_WALL_FREE) -> list[dict]:
    """Walls between two neighbouring towers that the view hides entirely are read as present.

    Seen obliquely along a wall between two towers, the near tower's lean covers the gap in the
    photo and the wall's top shows where the far tower's face would: grey either way, so the photo
    cannot say whether the wall stands. Towers side by side nearly always are joined (96 % of the
    neighbouring towers of 400 rendered finished castles). Only walls with at most `max_free` of their
    silhouette outside the decided pieces', and not clearly ruled out there, are taken, and of those
    none whose absence breaks fewer rules (a courtyard it would close has no keep, C7, for one). They
    stay uncertain in the confidence (their margin is about nil).
    """
    active, margin = fit.decision.active, fit.decision.margin
    cover, towers = fit.cover(), _decided_towers(fit)
    joined = [i for i in range(len(fit.elements)) if not active[i] and margin[i] >= -PIECE_MARGIN
              and _hidden_between_towers(fit, i, cover, towers, max_free)]
    if not joined:
        return []
    active[joined] = True
    problems = _rule_problems(build_castle(fit, keeps)[0])
    for i in list(joined):
        active[i] = False
        without = _rule_problems(build_castle(fit, keeps)[0])
        if without < problems:
            joined.remove(i)
            problems = without
        else:
            active[i] = True
    if not joined:
        return []
    where = ", ".join(f"{list(fit.elements[i].key[0])}-{list(fit.elements[i].key[1])}" for i in joined)
    return [{"rule": "G1", "severity": "notice",
             "message": f"{len(joined)} wall(s) between neighbouring towers are hidden behind the towers in this view "
                        f"and were read as present, as neighbouring towers nearly always are joined: {where}"}]


def _hidden_between_towers(fit: Fit, i: int, cover: np.ndarray, towers: set, max_free: float = HIDDEN_WALL_FREE) -> bool:
    """Element `i` is a wall between two decided towers with at most `max_free` of its silhouette outside the
    other decided pieces' (`cover`, from fit.cover()): the view hides it, so the photo cannot say whether it stands."""
    el = fit.elements[i]
    if el.kind != "edge" or len(el.idx) == 0 or not all(end in towers for end in el.key):
        return False
    others = cover[el.idx] - (1 if fit.decision.active[i] else 0)
    return float(np.mean(others == 0)) <= max_free


def _wall_and_table(fit: Fit, centre: tuple[float, float], extent: tuple[float, float], across: tuple[int, int],
                    cover: np.ndarray, min_view: float) -> tuple[float, float, float | None]:
    """A wall's box (`centre`, half `extent`) as the photo shows it: its mean evidence and share in view
    (Fit.evidence_in_view), and the lower table strip beside it (_beside_the_step; None when either is out of view)."""
    evidence, in_view = fit.evidence_in_view(centre, extent, fit.dims.wall_h, cover)
    table = _beside_the_step(fit, centre, extent, across, cover, min_view) if in_view >= min_view else None
    return evidence, in_view, table


def _beside_the_step(fit: Fit, centre: tuple[float, float], extent: tuple[float, float], across: tuple[int, int],
                     cover: np.ndarray, min_view: float) -> float | None:
    """The lower mean evidence of the two table strips, each a wall's width wide, flanking a wall's box a
    wall's width away on either side (flat on the table, the part no decided piece covers); None when
    neither strip is in view."""
    offset = 3 * fit.dims.wall_half
    strips = []
    for side in (1, -1):
        beside = (centre[0] + side * abs(across[0]) * offset, centre[1] + side * abs(across[1]) * offset)
        evidence, in_view = fit.evidence_in_view(beside, extent, 0.0, cover)
        if in_view >= min_view:
            strips.append(evidence)
    return min(strips) if strips else None


def extend_walls_from_towers(fit: Fit, keeps: list[FoundKeep], min_evidence: float = PIECE_MARGIN,
                             min_view: float = 0.25, min_contrast: float = WALL_CONTRAST) -> list[dict]:
    """Walls standing out from a tower with a free end, missed, are read as present where the photo
    shows plastic where they would stand and the castle is short of walls.

    A wall's candidate box runs to the lattice point at its far end; a wall ending free stops a tower's
    half-width short of it, and at the castle's edge its plastic is often seen only faintly (no other
    piece around it): judged over the whole box, such walls were read as absent. On the 13 sample photos
    whose lattice was right, 26 of 44 walls missed had a free end. Each is judged again as it stands,
    from the tower's face to a tower's half-width short of the free point, over the part no decided
    piece covers (at least `min_view` of it in view): of the candidates on those photos (an undecided
    step from a tower to a lattice point nothing else reaches) 12 of 21 true walls showed evidence
    above `min_evidence` and 3 of 187 empty steps did, all in a reading that already had more short
    walls than its boxes hold. So, strongest first, walls are taken only while the reading has fewer
    walls than the boxes in play hold (a finished game uses every grey piece), and never two ending at
    one free point (that would join wall to wall, G1).

    Where the pixel models see such a lone wall at all, they often see it at half certainty (on the
    green felt of unseen15's photo_097, five long walls standing free at the castle's edge showed a grey
    probability of 0.55-0.65, evidence about nil, against 0 on the felt beside them). So a step is also
    read where it shows plastic clearly more than the table strip beside it (`min_contrast` above the
    lower of the two strips flanking it, a wall's width either side). On 50 of unseen15's photos (used
    for development after their honest run), of the candidates left after all the rule steps, 67 of 128
    true walls and 27 of 647 empty steps passed this, the empty ones mostly below 45 degrees, where walls
    lean over their neighbours' strips; read through, all 200 photos' grey-piece errors went 12,805 ->
    12,787 (35 photos better, 29 worse, photo_097 20 -> 12). Of the two strips the lower counts, since
    the far one lies under the wall's own leaning top in an oblique view. The strongest candidates, by
    contrast where a strip is in view and by evidence elsewhere, are taken first.

    A step between two towers is judged the same way, and taken only while the boxes also have short
    walls left (such a wall is always a short one): where a warm light makes a wall's lit face look like
    a wooden table, the pixel models see only its top half (three such walls between towers on dev27's
    photo_006, 80 renders of unseen27's seeds; there the count, before complete_long_walls, still had two
    short walls too many, so none is taken). On dev27 this gave 7 photos better and 1 worse (grey-piece
    errors 4,410 -> 4,391; two more photos scored exactly at any confidence, none answered).
    """
    if fit.weight is None:
        return []
    active, towers = fit.decision.active, _decided_towers(fit)
    seen = _faint_walls_from_towers(fit, towers, min_evidence, min_view, min_contrast)
    if not seen:
        return []
    left = build_castle(fit, keeps)[0].pieces_left()
    missing = left["short walls"] + 2 * left["long walls"]  # in lattice steps of wall
    short_missing = left["short walls"]  # (a wall between two towers is a short wall)
    taken, notes = set(), []
    for i, start, free in seen:
        if missing <= 0:
            break
        if free in taken or (free in towers and short_missing <= 0):
            continue
        if free not in towers:
            taken.add(free)
        missing -= 1
        short_missing -= free in towers
        active[i] = True
        what = f"to the tower at {list(free)}" if free in towers else f"ending free at {list(free)}"
        notes.append({"rule": "components", "severity": "notice",
                      "message": f"a wall from the tower at {list(start)} {what} is seen only faintly; "
                                 "read as present, since the castle is short of walls"})
    return notes


def _wall_as_it_stands(fit: Fit, start: tuple[int, int], end: tuple[int, int]) -> tuple[tuple[float, float], tuple[float, float]]:
    """Centre and half extents (lattice units) of a short wall from the face of the tower at `start` to a
    tower's half-width short of `end` (a tower's face there, or the wall's free end)."""
    d = fit.dims
    stop_at = 1.0 - d.tower_half
    middle, half_length = (d.tower_half + stop_at) / 2, (stop_at - d.tower_half) / 2
    dx, dy = end[0] - start[0], end[1] - start[1]
    return (start[0] + dx * middle, start[1] + dy * middle), d.wall_extent(dx != 0, half_length)


def _faint_walls_from_towers(fit: Fit, towers: set, min_evidence: float, min_view: float,
                             min_contrast: float) -> list[tuple[int, tuple[int, int], tuple[int, int]]]:
    """(element, tower, other end) of every undecided step from a decided tower to a neighbouring tower or
    to a lattice point no other wall reaches, whose wall as it stands shows plastic: evidence above
    `min_evidence`, or `min_contrast` above the table strips beside it (at least `min_view` of each box in
    view); strongest first, by contrast where a strip is in view and by evidence elsewhere."""
    active, ends, cover = fit.decision.active, _wall_ends(fit), fit.cover()
    seen = []
    for i, el in enumerate(fit.elements):
        if active[i] or el.kind != "edge" or len(el.idx) == 0 or not (el.key[0] in towers or el.key[1] in towers):
            continue
        start, end = el.key if el.key[0] in towers else el.key[::-1]
        if end in ends and end not in towers:
            continue  # (a wall there would join wall to wall: G1; a long wall's middle is such a point)
        centre, extent = _wall_as_it_stands(fit, start, end)
        evidence, in_view, table = _wall_and_table(fit, centre, extent, (end[1] - start[1], end[0] - start[0]), cover, min_view)
        if in_view < min_view:
            continue
        contrast = evidence - table if table is not None else None
        if evidence > min_evidence or (contrast is not None and contrast > min_contrast):
            seen.append((-(contrast if contrast is not None else evidence), i, start, end))
    return [(i, start, end) for _, i, start, end in sorted(seen)]


def add_walls_the_counts_miss(fit: Fit, keeps: list[FoundKeep], max_missing: int = 4, min_evidence: float = PIECE_MARGIN,
                              min_view: float = 0.25, min_contrast: float = WALL_CONTRAST) -> list[dict]:
    """Short walls the photo shows, missed, are read as present where the finished castle lacks exactly
    some short walls: its towers match the boxes in play, it uses no more long walls than they hold, and
    at most `max_missing` short walls are unused.

    The rule steps before counted walls while a long wall's halves were still two short walls and walls
    the rules later drop were still there, so a wall a tower's face shows (a lit face taken for a wooden
    table, its top half seen) could be left out for a count that was not yet the castle's. Judged as in
    extend_walls_from_towers (evidence over the wall as it stands, or contrast with the table beside
    it), strongest first, steps from a decided tower to a neighbouring tower or to a free lattice point
    are read until the count is made up, never two to one free point and never one to a point where
    another wall ends (a long wall's middle among them, G4). The counts decided them: they stay uncertain in the confidence. On dev27 (80
    renders of unseen27's seeds): 5 photos better, none worse; photo_053 answered right (0.058 -> 0.765).
    Then, while walls are still missing, steps from towers that the photo does not clearly rule out
    (_walls_the_count_asks_for). Until session 36 a long wall missing too stopped all this (a missing
    short wall might be half of it); letting it run made grey-piece errors on unseen38-47 (1,000
    development photos) 52,771 -> 52,737 (24 photos better, 4 worse by a wall or two), one more scored
    exactly at any confidence, the same answers.
    """
    if fit.weight is None:
        return []
    left = build_castle(fit, keeps)[0].pieces_left()
    if left["towers"] != 0 or left["long walls"] < 0 or not 0 < left["short walls"] <= max_missing:
        return []
    active, margin, towers = fit.decision.active, fit.decision.margin, _decided_towers(fit)
    taken, notes = set(), []
    for i, start, end in _faint_walls_from_towers(fit, towers, min_evidence, min_view, min_contrast)[:left["short walls"]]:
        if end in taken:
            continue
        if end not in towers:
            taken.add(end)
        active[i], margin[i] = True, 0.0  # decided by the count: uncertain in the confidence
        notes.append({"rule": "components", "severity": "notice",
                      "message": f"the castle uses every tower of its boxes but {left['short walls']} short "
                                 f"wall(s) fewer; the wall from {list(start)} to {list(end)}, which the photo shows faintly, "
                                 "was read as present"})
    notes += _walls_the_count_asks_for(fit, keeps, towers)
    return notes


def _walls_the_count_asks_for(fit: Fit, keeps: list[FoundKeep], towers: set, max_margin: float = 0.5,
                              max_tries: int = 20) -> list[dict]:
    """Where the castle still lacks short walls after the faint walls are taken, steps from a decided tower
    (to another or to a free lattice point) that the photo does not clearly rule out (margin under
    `max_margin`; the `max_tries` weakest) are read as present while short walls are missing: each time
    the one that leaves the fewest rule problems, the weakest among equals, and none that adds a problem.

    A wall the view hides (behind a tower, or a lit face taken for the table) is decided absent on the
    little the photo shows of it, and a finished game uses every grey piece (rules.md, components): on
    eight development photos at 50-70 degrees whose only error was one short wall missing, with every
    tower and long wall read, the missing wall was the weakest such step seven times (margins -0.08 to
    0.43, against 0.33 to 0.88 for the next) and the eighth time the only one that also mended a
    rule the reading broke. Until session 36 only steps between two towers barely ruled out
    (margin under PIECE_MARGIN) were read so, weakest first; on unseen38-45 the change made grey-piece
    errors 41,855 -> 41,834 (20 photos better, 4 worse by one wall), 14 more photos read with every grey
    piece right, the same answers.
    The self-check (resolve_with_rules) reads such a wall as absent where it clashes with walls that later
    steps drop (a short wall ending under a long wall's middle, G4), so the wall that was there all along
    stays out although the count asks for it (dev27 photo_005: two such walls in line through a tower).
    The count decided them against the photo, so they stay uncertain in the confidence and the reading's
    exact count no longer vouches for its weak pieces (Fit.counted_against_photo; assess): with that
    vouching, dev unseen29 photo_014 was answered wrongly at 0.85, a wall taken where another was
    missed."""
    castle = build_castle(fit, keeps)[0]
    missing = castle.pieces_left()["short walls"]
    if missing <= 0:
        return []
    active, margin = fit.decision.active, fit.decision.margin
    cands = sorted((float(margin[i]), i) for i, el in enumerate(fit.elements)
                   if el.kind == "edge" and not active[i] and len(el.idx) and margin[i] < max_margin
                   and (el.key[0] in towers or el.key[1] in towers))[:max_tries]

    def problems_with(i: int) -> int:
        active[i] = True
        problems = _rule_problems(build_castle(fit, keeps)[0])
        active[i] = False
        return problems

    notes = []
    base = _rule_problems(castle)
    while missing > 0:
        # The fewest rule problems, the weakest margin among equals; never one that adds a problem.
        trials = [(problems_with(i), m, i) for m, i in cands if not active[i]]
        allowed = [trial for trial in trials if trial[0] <= base]
        if not allowed:
            break
        base, _, i = min(allowed)
        missing -= 1
        _read_for_the_count(fit, i)
        el = fit.elements[i]
        notes.append({"rule": "components", "severity": "notice",
                      "message": f"the castle is short of walls; the wall from {list(el.key[0])} to {list(el.key[1])}, "
                                 "which the photo does not clearly rule out, was read as present"})
    return notes


# How far (lattice steps) a wall may stand across from its place on the fitted lattice when a missing half is looked
# for (_evidence_nearby): about a wall's thickness (9 of 54 mm). The fitted lattice is a few pixels off the pieces
# towards the castle's edges (its ground plane a few per cent off in scale or tilt): against the renders' truth on
# the 18 of 22 development photos at 50-70 degrees whose lattice was right (session 35, 992 towers), a median 0.045
# of a step, a tenth of the towers more than 0.10 off and 3 % more than 0.15.
DRIFT = 0.15
# Evidence at most this is plain table to the pixel models (a long wall's far half is judged against it,
# _stands_out_on_clear_table).
CLEAR_TABLE = -0.95


def _evidence_nearby(fit: Fit, centre: tuple[float, float], half: tuple[float, float], height: float, cover: np.ndarray,
                     across: tuple[int, int], min_view: float, reach: float = DRIFT) -> tuple[float, float]:
    """The best evidence (and its share in view, at least `min_view` where any is) for a wall's box standing at
    `centre` or moved `across` by up to `reach` lattice steps (DRIFT), a third of that at a time."""
    best = fit.evidence_in_view(centre, half, height, cover)
    for shift in reach * np.array([-1.0, -2 / 3, -1 / 3, 1 / 3, 2 / 3, 1.0]):
        moved = (centre[0] + shift * across[0], centre[1] + shift * across[1])
        evidence, in_view = fit.evidence_in_view(moved, half, height, cover)
        if in_view >= min_view and (best[1] < min_view or evidence > best[0]):
            best = (evidence, in_view)
    return best


def _stands_out_on_clear_table(fit: Fit, centre: tuple[float, float], extent: tuple[float, float], across: tuple[int, int],
                               cover: np.ndarray, min_view: float, contrast: float = WALL_CONTRAST, clear: float = CLEAR_TABLE) -> bool:
    """A wall's box (`centre`, half `extent`) shows plastic `contrast` above the table strips `across` it, and the
    lower of those in view (_beside_the_step) is plainly table (evidence at most `clear`): a long wall's lone far
    half standing out over the castle's edge, which the pixel models see at half certainty (see complete_long_walls)."""
    evidence, _, table = _wall_and_table(fit, centre, extent, across, cover, min_view)
    return table is not None and table <= clear and evidence - table > contrast


def complete_long_walls(fit: Fit, keeps: list[FoundKeep], max_doubt: float = 0.35, min_view: float = 0.25, *,
                        as_counted: bool = False) -> list[dict]:
    """Short walls that stop at a free end where the other half of a long wall was missed are read as
    long walls.

    The decisions gave every wall a box over its whole lattice step, so the half of a long wall
    beyond its middle was judged with a tower's half-width of table at its far end counted against
    it: where nothing stands there it explains few pixels and is often missed. Each such half is judged
    again as it would stand (on over the middle, to a tower's face at the far end): taken where the
    part of it no decided piece covers shows plastic, there or up to DRIFT across (the fitted lattice
    stands a little off the pieces towards the castle's edges, where such walls end: on the 600
    development photos of unseen38-43 that search made grey-piece errors 31,153 -> 31,091, 53 photos
    better and 21 worse, three more scored exactly at any confidence, the same answers). Halves that
    show too little (at least `min_view` of the box must be in view) or too weakly are left to the
    piece counts, as before: a wall may end free (G4), so such a half is taken where a tower stands
    beyond it and the photo rules out a tower at the free end more clearly than the missing half;
    and, weakest first, as long as the reading has more short walls and fewer long walls than the
    boxes in play hold. A half is never
    taken where it would join another wall in line without a tower (G1); where another wall ends free across
    it at its far point (_ends_free) it may be: until session 29 that was barred too, and on dev27
    and dev28 allowing it made grey-piece errors 4,348 -> 4,328 and 3,501 -> 3,485 (8 and 9 photos better,
    1 worse on each).

    A long wall standing out over the castle's edge is often seen by the pixel models at half certainty: its
    far half's evidence a little under nil, the plain table around it surely table (an oak table's lone wall
    at 71 degrees, unseen58 h553855_048: evidence -0.08, grey probability about 0.5 all along it). Such a
    half counts as shown where it stands WALL_CONTRAST above the table strips beside it and the lower strip in
    view is plainly table (evidence CLEAR_TABLE or less; _stands_out_on_clear_table), on the pass held to the
    count (its evidence is still below nil): on unseen54's last pass (100 development photos, session 72) 12 of
    the 77 true far halves left out passed that and 6 of 524 empty ones, all 6 in readings more than 70 grey
    pieces wrong; where the strip reads above CLEAR_TABLE (a grained table, a shadow) 11 empty halves stood out
    so and 2 true ones. Read through on unseen55-60 (600 photos): grey-piece errors 30,609 -> 30,329 (38 photos
    better, 1 worse), every grey piece right on 159 instead of 154, the same 21 answers. Taken on the first pass
    too, uncounted, it gave 30,333 (40 better, 3 worse; one castle read exactly before lost a tower a step away
    to a half taken early).

    A short wall with both ends free and a tower one step beyond, in line, is a long wall from that tower
    whose near half was missed: that half is taken the same way where the photo shows it, never on the
    counts alone. On unseen38-43 grey-piece errors 31,091 -> 31,055 (22 photos better, 6 worse; three
    more read with every grey piece right), the same answers.

    With `as_counted` (once more after every rule step, when the walls' count is the castle's), the halves
    the photo shows are taken, strongest first, while the boxes hold a long wall the reading has not used;
    the others only as many as the reading has short walls over and long walls under the boxes' count.
    The first pass counts while other steps have yet to add or drop walls. On dev27 and dev28 (140 renders
    of unseen27's and unseen28's seeds) the second pass made grey-piece errors 4,384 -> 4,348 and
    3,527 -> 3,501 (10 photos better and 1 worse on each); not held to the count, it gained a little more
    (4,345 and 3,479) but made 4 photos worse, one by a long wall over the boxes' count where two short
    walls met with no tower. Until session 36 the halves the photo shows were held to that count too,
    so a half seen plainly stayed a short wall wherever the reading had no short wall too many (one
    missed elsewhere, or a game photographed before its end): taking them while a long wall is left made grey-piece
    errors on unseen38-43 31,055 -> 30,923 (47 photos better, 8 worse by 2 each, all already far off;
    two more read with every grey piece right), the same answers.
    """
    active, margin, d = fit.decision.active, fit.decision.margin, fit.dims
    index = {(el.kind, el.key): i for i, el in enumerate(fit.elements)}
    towers = _decided_towers(fit)
    ends = _wall_ends(fit)
    cover = fit.cover() if fit.weight is not None else None
    reach = 0.5 - d.tower_half / 2  # half the length of a long wall's half, from its middle to a tower's face
    seen, with_tower, free = [], [], []
    for end, dirs in ends.items():
        if end in towers or len(dirs) != 1:
            continue
        (x, y), (dx, dy) = end, dirs[0]
        start, far = (x + dx, y + dy), (x - dx, y - dy)
        half = index.get(("edge", tuple(sorted([end, far]))))
        # The half beyond a short wall from a tower; or the half by a tower, beyond a short wall with both
        # ends free (a long wall's far half).
        by_its_tower = start not in towers and far in towers and ends.get(start) == [(-dx, -dy)]
        if half is None or not (start in towers or by_its_tower):
            continue
        centre, extent, across = (x - dx * reach, y - dy * reach), d.wall_extent(dx != 0, reach), (abs(dy), abs(dx))
        evidence, in_view = (0.0, 0.0) if cover is None else _evidence_nearby(fit, centre, extent, d.wall_h, cover, across, min_view)
        open_far = _ends_free(ends.get(far, []), (dx, dy))
        plastic = evidence > 0 or (as_counted and cover is not None
                                   and _stands_out_on_clear_table(fit, centre, extent, across, cover, min_view))
        if in_view >= min_view and plastic and (far in towers or open_far):
            seen.append((-evidence, half, end, far))
        elif margin[half] > max_doubt or by_its_tower:
            continue
        elif far in towers:
            tower = index.get(("tower", end))
            if tower is None or margin[tower] > margin[half]:
                with_tower.append((float(margin[half]), half, end, far))
        elif open_far:
            free.append((float(margin[half]), half, end, far))
    left = build_castle(fit, keeps)[0].pieces_left()
    spare = min(-left["short walls"] - len(seen), left["long walls"] - len(seen))
    free_ends, notes = set(), []
    shown = {half for _, half, _, _ in seen}
    if as_counted:
        halves = sorted(seen)[:max(0, left["long walls"])]
        halves += (sorted(with_tower) + sorted(free))[:max(0, min(-left["short walls"], left["long walls"]) - len(halves))]
    else:
        halves = sorted(seen) + with_tower + sorted(free)[:max(spare, 0)]
    for _, half, end, far in halves:
        if far not in towers:
            if far in free_ends:  # two free halves meeting would join wall to wall
                continue
            free_ends.add(far)
        active[half] = True
        why = ("its far half shows where it stands, ending short of the next lattice point" if half in shown
               else "although the photo barely shows that half")
        notes.append({"rule": "G3", "severity": "notice",
                      "message": f"the wall stopping at {list(end)} was read as a long wall on to {list(far)}, {why}"})
    return notes


def remove_excess_towers(fit: Fit, keeps: list[FoundKeep]) -> list[dict]:
    """No more towers than the boxes in play hold (the rules' components): the weakest surplus towers
    standing in the middle of a straight run of two walls are read as a long wall's middle instead.

    Where a long wall stands, its middle shows grey plastic at a lattice point, and in a soft or
    oblique photo a tower there explains the pixels nearly as well; only the piece count tells them
    apart. Towers at corners, crossings and ends are never removed (G1 needs them). The run's far ends
    must be a tower at one end and a tower or a wall's free end at the other (_ends_free): a long wall may
    end free (G4). Until session 29 both had to be towers; allowing a free end made grey-piece errors on
    dev27 and dev28 4,301 -> 4,251 and 3,475 -> 3,450 (8 and 5 photos better, 3 and 1 worse)."""
    castle, _ = build_castle(fit, keeps)
    surplus = -castle.pieces_left()["towers"]
    if surplus <= 0:
        return []
    active = fit.decision.active
    ends = _wall_ends(fit)
    towers = _decided_towers(fit)
    candidates = []
    for i, el in enumerate(fit.elements):
        dirs = ends.get(el.key, []) if el.key in towers else []
        if _straight_through(dirs):
            (x, y), (dx, dy) = el.key, dirs[0]
            beyond = [((x + s * dx, y + s * dy), (-s * dx, -s * dy)) for s in (-1, 1)]  # each wall's far end, and back
            held = [p in towers for p, _ in beyond]
            if any(held) and all(h or _ends_free(ends[p], back) for h, (p, back) in zip(held, beyond)):
                candidates.append((float(fit.decision.margin[i]), i))  # a tower at one end, the other a tower or free
    notes = []
    for _, i in sorted(candidates)[:surplus]:
        active[i] = False
        fit.fitted_to_the_count.add(i)
        notes.append({"rule": "components", "severity": "notice",
                      "message": f"more towers than {castle.sets_in_play} set(s) hold; the one least clearly seen at "
                                 f"{list(fit.elements[i].key)} was read as the middle of a long wall"})
    return notes


def open_joints(fit: Fit, min_view: float = 0.25, clear: float = 0.4) -> list[dict]:
    """Two short walls ending in line at a lattice point with no tower: told from a long wall by the gap.

    A long wall runs on over its middle lattice point; two short walls that meet there with open ends
    (legal: a tower may still be added, rules.md G1, G4) leave a tower's width of table between them.
    At each long wall's middle, the part of that gap no other decided piece covers in the photo must
    show clearly no plastic (mean evidence below -`clear`), and at least `min_view` of it must be in
    view; else the wall stays long (long walls are far more common).
    """
    if fit.weight is None:
        return []
    castle, (ox, oy) = build_castle(fit, [])
    d, cover, found = fit.dims, fit.cover(), []
    index = {(el.kind, el.key): el for el in fit.elements}
    for wall in castle.walls:
        if wall.middle is None:
            continue
        (x, y), along_i = (wall.middle[0] + ox, wall.middle[1] + oy), wall.a[1] == wall.b[1]
        (dx, dy), box = (1, 0) if along_i else (0, 1), d.wall_extent(along_i, 0.5 - d.tower_half)
        # The halves' boxes span the gap; the two short walls as they stand do not.
        halves = [index[("edge", tuple(sorted([(x, y), (x + s * dx, y + s * dy)])))].idx for s in (-1, 1)]
        shorts = [box_pixels(fit.cam, fit.shape, (x + s * 0.5 * dx, y + s * 0.5 * dy), box, d.wall_h) for s in (-1, 1)]
        for removed, added in zip(halves, shorts):
            cover[removed] -= 1
            cover[added] += 1
        evidence, in_view = fit.evidence_in_view((x, y), d.wall_extent(along_i, d.tower_half), d.wall_h, cover)
        for removed, added in zip(halves, shorts):
            cover[added] -= 1
            cover[removed] += 1
        if in_view < min_view or evidence > -clear:
            continue
        fit.open_joints.add((x, y))
        found.append([x, y])
    if not found:
        return []
    return [{"rule": "G1", "severity": "notice",
             "message": f"{len(found)} pair(s) of short walls meet end to end with no tower between them (the photo shows "
                        f"the gap a long wall would fill): {', '.join(str(p) for p in found)}"}]


def choose_double_keeps(keeps: list[FoundKeep], stands_out: float = 0.12, clear_lead: float = 0.05,
                        larger: float = DOUBLE_FILL_DOUBT, beside: list[bool] | None = None) -> list[dict]:
    """At most one Double Keep per colour (C5): decided among the colour's keeps in the castle, not one by
    one. Keeps `beside` the castle are supply, read single and left out of the choice: a keep taken for
    stacked out there (a false keep on the table) once took its colour's Double Keep from the castle's,
    and a wrong answer followed (session 33, a development reading of a 12-megapixel photo).

    Each keep says how much better two stacked keeps explain its blob than one. Judged alone, a
    Double Keep seen from high up or a little off in height often looks single, and several single
    keeps can look stacked. Compared within a colour, the Double Keep is the one that stands out from
    the others. A choice that is not clear (several look stacked alike, the one that stands out still
    looked single alone, or none is read double but one nearly looks it) counts as uncertain in the
    confidence. So does a colour read without a Double Keep where one keep's blob is `larger` times
    the others' (relative to a single keep's silhouette there): a Double Keep whose lower body merges
    with the table or a shadow fits a single keep's outline, but its blob is still bigger. Keeps
    whose height was read from their size (keeps.heights_from_size) carry that reading's certainty in
    their confidence: only the comparison within the colour applies to them. A keep alone of its colour
    has nothing to stand out from, and judged alone a small lead is more often a single keep's: it is
    read double only by a lead above keeps.DOUBLE_LEAD (of 95 keeps of development renders that two
    stacked keeps explained better by less than that, 19 were double).
    A Double Keep read by its lead is in doubt when its colour's other keeps (two or more) look as big as a
    Double Keep would there (their median fill at least halfway to its `double_fill`): the keep mask took in
    more than the keeps (yellow keeps on pine wood, session 70's wrong answer h553555_088 at 0.85), and
    the lead may be the spill's. Surely read Double Keeps were wrong there 4 times of 25 on unseen54-56
    (12 of 284 elsewhere) and 4 of 19 on session 71's new unseen57-58 (4 of 222 elsewhere).
    A colour whose Double Keep is read surely by its outline (KEEP_DOUBT or more, no doubt) is settled: its
    other keeps are single by C5, whatever their own reading said of their height. (Dev unseen22b-c: of 59
    weak or doubted keeps so settled in readings with every grey piece right, none was a Double Keep.) A
    Double Keep read from its size does not settle its colour: on unseen22f two readings from straight
    above were answered wrongly when one did (a single keep as big as a double, and another colour's
    doubts lifted while one colour's Double Keep went unread); without it both were refused, and of the
    right answers of unseen22b-f (400 photos) one was lost.
    """
    notes: list[dict] = []
    by_colour: dict[str, list[FoundKeep]] = {}
    for k, outside in zip(keeps, beside or [False] * len(keeps)):
        if outside:  # supply: no Double Keep (C5 makes one as a keep is placed in the castle), and it scores nothing
            if k.double:
                k.double, k.doubt = False, "beside the castle, read single"
            continue
        by_colour.setdefault(k.colour, []).append(k)
    for colour, ks in by_colour.items():
        ks.sort(key=lambda k: -k.stacked)
        top, rest = ks[0], ks[1:]
        runner_up = rest[0].stacked if rest else -1.0
        typical = float(np.median([k.stacked for k in rest])) if len(rest) >= 2 else None
        for k in rest:
            if k.double:
                k.confidence, k.doubt = min(k.confidence, HEIGHT_CAP), "looked stacked, read single"
            k.double = False
        # Alone of its colour and read by its outline, a keep has only its own lead to go by.
        lead_needed = DOUBLE_LEAD if not rest and not top.height_by_size else 0.0
        if top.stacked > lead_needed:
            top.double = True
            if top.stacked - runner_up < clear_lead:
                top.confidence, top.doubt = min(top.confidence, HEIGHT_CAP), STACKED_BY_A_SMALL_LEAD
            elif len(rest) >= 2 and top.double_fill > 1.0 and _look_stacked(rest, top.double_fill):
                top.confidence, top.doubt = min(top.confidence, HEIGHT_CAP), ITS_COLOUR_ALL_LOOK_STACKED
                notes.append({"rule": "C5", "severity": "notice",
                              "message": f"every {colour} keep looks as big as a Double Keep here (their colour may run into "
                                         "the table or a shadow), so which one is the Double Keep is uncertain"})
            looked = sum(1 for k in ks if k.stacked > 0)
            if looked > 1:
                notes.append({"rule": "C5", "severity": "notice",
                              "message": f"{looked} keeps of {colour} looked stacked; a player has one Double Keep, so only the clearest one was read as double"})
        elif top.height_by_size:
            pass  # its size said single, and how surely is its confidence: the outline's rules below do not apply
        elif typical is not None and top.stacked - typical > stands_out and top.stacked > -stands_out:
            top.double = True
            top.confidence, top.doubt = min(top.confidence, HEIGHT_CAP), TALLER_THAN_ITS_COLOUR
            notes.append({"rule": "C5", "severity": "notice",
                          "message": f"one {colour} keep looks clearly taller than the other {colour} keeps, so it was read as the Double Keep"})
        elif top.stacked > -stands_out:
            # Read single, but nearly as well explained stacked: a Double Keep seen from high up looks
            # like this, and missing it halves a courtyard's points.
            top.double = False
            top.confidence, top.doubt = min(top.confidence, HEIGHT_CAP), "nearly stacked"
            # Said even when the reading is answered: the player can check that one keep by eye.
            notes.append({"rule": "C5", "severity": "notice",
                          "message": f"one {colour} keep nearly looks stacked but was read as a single keep: "
                                     "if it is a Double Keep, its courtyard scores double"})
        if top.double and top.confidence >= DOUBLE_SURE and not top.height_doubt and not top.height_by_size:
            # C5 settles the colour: its one Double Keep is read surely, so the others are single, however
            # their own outline or size left it (seen from nearly straight above, most keeps' heights are
            # read weakly from their size). Their confidence is then how surely each is a keep at all.
            for k in rest:
                if k.confidence < shape_confidence(k.iou):
                    k.confidence, k.doubt = shape_confidence(k.iou), SINGLE_BESIDE_ITS_DOUBLE
        biggest = max(ks, key=lambda k: k.fill)
        if not any(k.double for k in ks) and not biggest.height_by_size:  # (its size was weighed already)
            others = [k.fill for k in ks if k is not biggest]
            if len(others) < 2:  # too few of its colour to say what a single one looks like here
                others = [k.fill for k in keeps if k is not biggest and not k.double]
            if others and biggest.fill >= larger * float(np.median(others)):
                biggest.confidence, biggest.doubt = min(biggest.confidence, HEIGHT_CAP), BIGGER_THAN_ITS_COLOUR
                notes.append({"rule": "C5", "severity": "notice",
                              "message": f"one {colour} keep looks bigger than the others but not clearly stacked: "
                                         "it may be a Double Keep"})
    return notes


def _look_stacked(keeps: list[FoundKeep], double_fill: float) -> bool:
    """Whether these keeps' blobs are, at their median, nearer a Double Keep's size (`double_fill` times a
    single keep's silhouette) than a single keep's."""
    return float(np.median([k.fill for k in keeps])) >= (1.0 + double_fill) / 2


def resolve_with_rules(fit: Fit, keeps: list[FoundKeep], max_ambiguous: int = 6) -> list[dict]:
    """Where the photo is ambiguous, let the rules decide; every such decision is reported.

    Only pieces whose image evidence is weak (|margin| < PIECE_MARGIN) may be flipped, one or two at a
    time, and only when that removes rule problems (G1-G6, piece counts), after the Double Keeps are
    chosen per colour (C5), walls the view hides between neighbouring towers read as present, short
    walls stopping free completed to long walls where the photo or the piece counts say so, towers added where walls meet (G1)
    or where a wall ends and the photo leans to one, and surplus towers in straight runs removed
    (the boxes' piece counts). The confidence still counts these pieces as uncertain. A wall the view hides
    between neighbouring towers is not flipped out while the castle has no wall to spare.
    """
    notes = choose_double_keeps(keeps, beside=keeps_beside_the_castle(fit, keeps))
    notes += join_hidden_walls(fit, keeps)
    notes += extend_walls_from_towers(fit, keeps)
    notes += complete_long_walls(fit, keeps)
    notes += add_required_towers(fit)
    notes += drop_walls_at_blocked_ends(fit)
    notes += add_towers_at_free_ends(fit, keeps)
    notes += remove_excess_towers(fit, keeps)
    castle, _ = build_castle(fit, keeps)
    base = _rule_problems(castle)
    if base == 0:
        return notes
    m = np.abs(fit.decision.margin)
    # A wall the view hides between neighbouring towers has no evidence (margin about nil), so it is the first
    # flipped, yet such towers nearly always are joined: taking it out is right where the castle has a wall
    # more than its boxes hold, and hides the real misread (a keep, say) where it has none to spare. On unseen55,
    # 56, 58 and 59 (400 development photos) keeping such walls whenever they were flipped made 46 photos better and
    # 49 worse, 4 fewer read with every grey piece right; kept only without a wall to spare, as below, on
    # unseen55-62 (800): grey-piece errors 39,394 -> 39,340 (78 photos better, 35 worse), 2 more answered (31, all
    # right), none lost.
    cand = [i for i in np.argsort(m) if m[i] < PIECE_MARGIN and len(fit.elements[i].idx) > 0][:max_ambiguous]
    left = castle.pieces_left()
    if left["short walls"] + 2 * left["long walls"] >= 0:  # no wall to spare (in lattice steps of wall)
        # Such a wall leaves the weakest pieces tried without letting a stronger one in: a wall that rule steps put
        # there would be read present unmarked, and its castle's count would vouch for it (a wall of unseen62's
        # h554255_015 read so in the wrong place was answered at 0.85).
        cover, towers = fit.cover(), _decided_towers(fit)
        cand = [i for i in cand if not (fit.decision.active[i] and _hidden_between_towers(fit, i, cover, towers))]
    best = (base, 0.0, ())
    for r in (1, 2):
        for combo in itertools.combinations(cand, r):
            fit.decision.active[list(combo)] ^= True
            cost = _rule_problems(build_castle(fit, keeps)[0])
            fit.decision.active[list(combo)] ^= True
            key = (cost, float(sum(m[i] for i in combo)), combo)
            if key[:2] < best[:2]:
                best = key
    if best[2] and best[0] < base:
        for i in best[2]:
            fit.decision.active[i] ^= True
            el = fit.elements[i]
            what, where = ("tower", list(el.key)) if el.kind == "tower" else ("wall", f"{list(el.key[0])}-{list(el.key[1])}")
            notes.append({"rule": "self-check", "severity": "notice",
                          "message": f"the photo barely shows whether a {what} stands at {where}; read as "
                                     f"{'present' if fit.decision.active[i] else 'absent'} because the rules allow only that"})
    return notes


# Once the walls' count is the castle's, a tower at a wall's free end that the photo rules out by less than this
# margin is read as present while the boxes' count asks for towers (add_towers_at_free_ends).
FREE_END_TOWER_DOUBT = 0.1


def settle_with_the_counts(fit: Fit, keeps: list[FoundKeep]) -> list[dict]:
    """The rule steps taken once more after resolve_with_rules, on the castle's walls as they now stand:
    open joints told from long walls, walls ending under a long wall's middle, long walls' far halves,
    surplus towers and towers at walls' free ends as the boxes' counts say, and short walls the counts miss.

    The towers' count is settled again after the walls' (remove_excess_towers): the last steps can leave
    a surplus tower in a straight run of walls the first pass did not see as one. On dev27 and dev28
    this made grey-piece errors 4,328 -> 4,304 and 3,485 -> 3,477 (6 and 3 photos better, none worse)."""
    notes = open_joints(fit)
    notes += drop_walls_across_long_walls(fit, keeps)
    notes += complete_long_walls(fit, keeps, as_counted=True)
    notes += remove_excess_towers(fit, keeps)
    notes += add_towers_at_free_ends(fit, keeps, max_margin=FREE_END_TOWER_DOUBT)
    notes += add_walls_the_counts_miss(fit, keeps)
    return notes


# Unit lattice elements in one box (a long wall covers 2).
ELEMENTS_PER_SET = TOWERS_PER_SET + SHORT_WALLS_PER_SET + 2 * LONG_WALLS_PER_SET


def make_plausibility(sets: int):
    """Plausibility 0..1 of a candidate reading: few rule violations, and about the pieces of `sets` boxes.

    The boxes hold only so many pieces, so a lattice of half or a third of the true pitch (which can
    explain the pixels about as well) gives too many pieces and is told apart by this.
    """
    expected = ELEMENTS_PER_SET * sets

    def plausibility(fit: Fit) -> float:
        castle, _ = build_castle(fit, [])
        n = len(castle.towers) + len(castle.walls)
        if n == 0:
            return 0.0
        bad = sum(1 for f in score_castle(castle).findings if f.severity == "violation")
        rules = max(0.05, 1.0 - 2.0 * bad / n)
        n_el = int(fit.decision.active.sum())
        # Only an excess is impossible; a smaller castle may be an unfinished game.
        count = math.exp(-2.0 * max(0.0, math.log(max(1, n_el) / expected)))
        return float(rules * count)

    plausibility.expected_elements = expected  # type: ignore[attr-defined]
    return plausibility


def keeps_beside_the_castle(fit: Fit, keeps: list[FoundKeep], margin: float = 0.1) -> list[bool]:
    """For each keep, whether it stands outside the outline (convex hull) of the decided pieces: a
    keep there is in no courtyard. (Conservative: a keep in the bay of an L-shaped castle is inside.)"""
    points = [p for el, a in zip(fit.elements, fit.decision.active) if a
              for p in ([el.key] if el.kind == "tower" else el.key)]
    if len(points) < 3:
        return [False] * len(keeps)
    outline = MultiPoint(points).convex_hull.buffer(margin)
    return [not outline.contains(Point(k.at)) for k in keeps]


# How much better one of two keeps too close to both stand must fit its blob to be read as the keep
# (drop_keeps_crowding_another): a clear lead, as against the 0.02-0.1 the closest true pairs showed.
CROWDING_LEAD = 0.1


def drop_keeps_crowding_another(castle: Castle, keeps: list[FoundKeep], dims: Dims) -> tuple[list[FoundKeep], list[dict]]:
    """Of two keeps of different colours claiming one courtyard, closer together than a keep's width and
    a wall's thickness, the one its silhouette explains worse (lower IoU) is read as the other's fringe:
    (the keeps kept, a notice if any was dropped).

    So close, they cannot both stand: in one courtyard they break C2, and a wall between them would not
    fit. What makes such a pair is a patch of the table's colour beside a keep (its shadow or the cloth
    around it on a burgundy felt, a navy linen, a gingham's check), read as a keep of that colour: the
    courtyard then looked claimed by two players and the reading was refused for breaking the rules.
    Where the two fit about as well (IoUs within CROWDING_LEAD), the photo does not say which is the
    keep, and both stay for the rules to refuse. On development renders (unseen75-76, 319 readings; 53
    such pairs within the reach) the better fit was the true keep in 51 pairs, by 0.02 to 0.56, and
    the patch in 2, by 0.15 and 0.23 (a blue gingham's checks, as big as keeps); two true keeps in one
    courtyard of a reading (a wall missed between them) stood 0.84 steps apart or more. The reading stays
    refused all the same (CROWDED_CLAIM, in assess): its guess, which a player corrects, just lacks the patch.
    """
    reach = 2 * dims.keep_half + 2 * dims.wall_half
    placed_of = {id(placed): found for found, placed in zip(keeps, castle.keeps)}  # build_castle keeps their order
    dropped: set[int] = set()
    for yard in keeps_by_courtyard(castle, find_courtyards(castle)).values():
        claimants = sorted((placed_of[id(k)] for k in yard), key=lambda k: -k.iou)
        for i, better in enumerate(claimants):
            if id(better) in dropped:
                continue
            for worse in claimants[i + 1:]:
                if (worse.colour != better.colour and math.dist(worse.at, better.at) < reach
                        and better.iou - worse.iou >= CROWDING_LEAD):
                    dropped.add(id(worse))
    if not dropped:
        return keeps, []
    kept = [k for k in keeps if id(k) not in dropped]
    gone = sorted(k.colour for k in keeps if id(k) in dropped)
    what = f"a {gone[0]} patch" if len(gone) == 1 else f"{len(gone)} patches ({', '.join(gone)})"
    notes = [{"rule": "C2", "severity": "notice",
              "message": f"{what} pressed against a keep of another colour in its courtyard read as that keep's shadow "
                         "or the table, not a keep: two keeps cannot stand so close"}]
    return kept, notes


def drop_keeps_of_no_set(castle: Castle, keeps: list[FoundKeep], nearly: float = 0.9) -> tuple[list[FoundKeep], list[dict]]:
    """Keeps beside the castle of a colour no player of it can have are read as not keeps: (the keeps
    kept, a notice per colour dropped).

    One set is one edition's two colours (red and blue, or yellow and green). A castle built of one
    set's grey pieces, nearly all of them (`nearly`), whose courtyards are claimed by one edition's
    colours was played by those two: keeps of another colour that claim no courtyard are then
    something of its colour on the table (a wooden floor's knots read as yellow keeps on dev27's
    photo_063, a green keep that was none on photo_000), not a third player's supply. Counted as two sets, they made
    the castle look half built to the rule steps, and added a player with no points to the score.
    """
    colours = castle.colours_in_play
    if len(colours) <= 2 or castle.players:
        return keeps, []
    left = replace(castle, sets=1).pieces_left()
    if min(left.values()) < 0 or sum(left.values()) > (1 - nearly) * sum(GREY_PIECES_PER_SET.values()):
        return keeps, []
    claiming = {k.colour for yard in keeps_by_courtyard(castle, find_courtyards(castle)).values() for k in yard}
    edition = next((pair for pair in EDITIONS if claiming <= set(pair)), None)
    if edition is None or not claiming:
        return keeps, []
    strays = [c for c in colours if c not in edition]
    kept = [k for k in keeps if k.colour not in strays]
    notes = [{"rule": "components", "severity": "notice",
              "message": f"{sum(k.colour == c for k in keeps)} {c} keep(s) beside the castle were read, but its grey pieces "
                         f"are one set's and its courtyards are {' and '.join(edition)}'s: read as not keeps (something "
                         f"{c} on the table?)"} for c in strays]
    return kept, notes


def drop_keeps_of_a_table_pattern(castle: Castle, keeps: list[FoundKeep]) -> tuple[list[FoundKeep], list[dict]]:
    """Keeps beside the castle of a colour read more often than two boxes hold are read as the table's
    pattern: (the keeps kept, a notice per colour).

    Each box holds KEEPS_PER_COLOUR keeps of a colour, and two boxes of one edition are the most a game
    uses (markers standing in for keeps, C8, are not of the colour). Beyond that, something of the colour
    covers the table: a gingham cloth's blue checks were read as 494 blue keeps on unseen37's photo_055,
    which a player correcting the guess would have had to delete one by one. The keeps that claim a
    courtyard stay; they decide the score and the confidence judges them.
    """
    pieces: dict[str, int] = {}
    for k in castle.keeps:
        pieces[k.colour] = pieces.get(k.colour, 0) + k.pieces
    pattern = [c for c, n in pieces.items() if n > 2 * KEEPS_PER_COLOUR]
    if not pattern:
        return keeps, []
    claiming = {id(k) for yard in keeps_by_courtyard(castle, find_courtyards(castle)).values() for k in yard}
    # castle.keeps are built from `keeps` in the same order (build_castle)
    kept = [found for found, placed in zip(keeps, castle.keeps) if found.colour not in pattern or id(placed) in claiming]
    notes = [{"rule": "C8", "severity": "notice",
              "message": f"{pieces[c]} {c} keeps were read, more than two boxes hold: something {c} on the table "
                         f"(a patterned cloth?) looks like keeps, so those beside the castle were left out; "
                         f"a plain surface under the castle reads better"} for c in sorted(pattern)]
    return kept, notes
