"""Several photos of one castle, read as one: where every reading builds the same castle, each part of the
confidence is taken from the photo that reads it best.

From 70 degrees up a Double Keep barely leans, so one photo cannot tell it from a single keep; lower down
the towers hide walls behind them. A second photo from elsewhere round the table sees what the first
could not. Each photo is read on its own (pipeline.read_photo); the readings are brought into one
lattice frame (scoring.align) and compared piece by piece: the towers, the walls, and the keeps that
claim each courtyard. Where they all agree, the confidence's factors (confidence.assess: pieces, keeps,
fit, ...) are each the best any photo gave, since a piece one photo doubts and another reads clearly,
read the same, is no longer in doubt. Two photos that are both unsure of the same keep's height stay
unsure of it. Where the readings disagree, the most confident one can only be right if the others are
wrong: its confidence becomes c * prod(1 - c_other) / (c * prod(1 - c_other) + 1 - c) (each confidence
taken as the chance that its reading is right, the photos' errors as independent), so a photo that reads
well outweighs one that reads poorly, and two confident photos that disagree refuse, naming the pieces
in dispute; so does any disagreement with a photo that would be answered on its own (two answers that
contradict each other are for the players to settle, whatever their confidences: on unseen74 a photo
answered wrongly at 1.0 where the castle's other photo answered rightly at 0.85).

(Session 77 first refused every disagreement: on 100 castles photographed twice, 2 answers against the
10 its photos gave alone, since a photo read at confidence near 0 always differs somewhere; and then
refused every photo that seemed to show another castle, which is what a reading near 0 looks like: on
unseen74's 100 castles, 2 of the 12 answers the photos gave alone lost that way.)
"""
from __future__ import annotations

import math
from dataclasses import replace

from scoring import Castle, score_castle
from scoring.align import Alignment, align
from scoring.courtyards import find_courtyards
from scoring.score import keeps_by_courtyard
from vision.confidence import CONFIDENCE_THRESHOLD
from vision.pipeline import PhotoReading, read_photo

# Below this share of the towers matched, two readings are taken for photos of different castles.
SAME_CASTLE_TOWERS = 0.5


def read_photos(photos: list[bytes], *, profile=None, debug_dir: str | None = None) -> PhotoReading:
    """Read several photos of one castle (from different sides or heights) as one reading. Raises
    vision.errors.PhotoError, naming the photo, when one of them is not a photo. With `debug_dir`, each
    photo's intermediate images go to its own folder in it (photo_1, photo_2, ...)."""
    from vision.errors import PhotoError

    readings = []
    for n, data in enumerate(photos, 1):
        where = debug_dir if debug_dir is None or len(photos) == 1 else f"{debug_dir}/photo_{n}"
        try:
            readings.append(read_photo(data, profile=profile, debug_dir=where))
        except PhotoError as e:
            raise PhotoError(f"photo {n}: {e}") from e
    return combine_readings(readings)


def castle_read(reading: PhotoReading) -> Castle | None:
    """What a reading built, answered or not (a refused reading's guess is still a reading)."""
    return reading.castle if reading.castle is not None else reading.tentative_castle


def claims(castle: Castle) -> dict[frozenset, tuple[tuple[str, bool], ...]]:
    """Each courtyard (by its cells) with the keeps claiming it, as (colour, double): what a keep
    decides in the score. Keeps outside every courtyard are supply and not compared."""
    yards = find_courtyards(castle)
    by_id = keeps_by_courtyard(castle, yards)
    return {y.cells: tuple(sorted((k.colour, k.double) for k in by_id.get(y.id, []))) for y in yards}


def differences(reference: Castle, other: Castle) -> list[str]:
    """The pieces two castles in one frame disagree about, in words (empty when they agree)."""
    out = [f"a tower at [{x}, {y}]" for x, y in sorted(set(reference.towers) ^ set(other.towers))]
    out += [f"a wall from [{w.a[0]}, {w.a[1]}] to [{w.b[0]}, {w.b[1]}]"
            for w in sorted(set(reference.walls) ^ set(other.walls), key=lambda w: (w.a, w.b))]
    if not out:  # same walls, so the same courtyards: compare who claims them
        a, b = claims(reference), claims(other)
        for cells in sorted(a, key=min):
            if a[cells] != b.get(cells):
                x, y = min(cells)
                out.append(f"the keeps in the courtyard at [{x}, {y}]")
    return out


def confidence_against(confidence: float, disagreeing: list[float]) -> float:
    """How sure a reading stays when photos read with the `disagreeing` confidences read the castle otherwise:
    it is right only where they are all wrong (see the module's docstring)."""
    right = confidence * math.prod(1.0 - c for c in disagreeing)
    return right / (right + 1.0 - confidence) if right > 0 else 0.0


def combine_readings(readings: list[PhotoReading]) -> PhotoReading:
    """One reading from several photos of one castle (see the module's docstring). The result is the most
    confident photo's reading, in its frame, with the confidence, refusal and findings of all of them."""
    if not readings:
        raise ValueError("no photos to combine")
    if len(readings) == 1:
        return readings[0]
    order = sorted(range(len(readings)), key=lambda i: -readings[i].confidence)
    read = [i for i in order if castle_read(readings[i]) is not None]
    best = readings[order[0]]
    photos = [{"photo": i + 1, "confidence": round(r.confidence, 3), "refusal": r.refusal,
               "factors": r.rectification.get("factors", {})} for i, r in enumerate(readings)]
    timings: dict[str, float] = {}
    for r in readings:
        for stage, s in r.timings.items():
            timings[stage] = timings.get(stage, 0.0) + s
    if not read:  # none could be read at all: the most confident refusal's advice
        return replace(best, timings=timings, rectification={**best.rectification, "photos": photos})
    ref = readings[read[0]]
    reference = castle_read(ref)
    unread = [i for i in order if i not in read]
    notes = [{"rule": "photos", "severity": "notice",
              "message": f"photo {i + 1} could not be read ({readings[i].refusal}), so the reading rests on the others"}
             for i in unread]
    disputes: list[str] = []
    disputing: list[int] = []
    for i in read[1:]:
        other = castle_read(readings[i])
        turn = align(other, reference)
        moved = turn.apply(other)
        photos[i]["alignment"] = turn.to_json()
        matched = len(set(moved.towers) & set(reference.towers)) / max(1, len(reference.towers), len(moved.towers))
        if matched < SAME_CASTLE_TOWERS:
            # (Weighed like any disagreement: a photo read near 0 matches little of anything.)
            disputes.append(f"photo {i + 1} seems to show another castle (only {matched:.0%} of its towers match photo {read[0] + 1}'s)")
            disputing.append(i)
            continue
        differ = differences(reference, moved)
        disputes += [f"{d} (photo {read[0] + 1} and photo {i + 1} differ)" for d in differ]
        if differ:
            disputing.append(i)
    photos[read[0]]["alignment"] = Alignment().to_json()
    if disputes:
        shown = "; ".join(disputes[:6]) + (f"; and {len(disputes) - 6} more" if len(disputes) > 6 else "")
        confidence = confidence_against(ref.confidence, [readings[i].confidence for i in disputing])
        rect = {**ref.rectification, "photos": photos}
        contradicted = any(readings[i].refusal is None for i in disputing)
        if ref.castle is not None and not contradicted and confidence >= CONFIDENCE_THRESHOLD:
            notes.append({"rule": "photos", "severity": "notice",
                          "message": f"the other photos, read less surely, differ about {shown}: check those on the table"})
            return replace(ref, confidence=confidence, timings=timings, findings=notes + ref.findings, rectification=rect)
        refusal = (f"the photos do not agree about {len(disputes)} piece{'s' if len(disputes) != 1 else ''}: {shown}. "
                   "Check those on the table, or score the photo taken from 60 to 75 degrees on its own")
        return replace(ref, castle=None, score=None, refusal=refusal, tentative_castle=reference,
                       confidence=confidence, timings=timings, findings=notes + ref.findings, rectification=rect)
    agreeing = [readings[i] for i in read]
    names = set().union(*(r.rectification.get("factors", {}) for r in agreeing))
    factors = {k: max(r.rectification.get("factors", {}).get(k, 0.0) for r in agreeing) for k in sorted(names)}
    # (Never below the surest photo's own: the factors are stored rounded.)
    confidence = max(float(math.prod(factors.values())) if factors else 0.0, ref.confidence)
    notes.append({"rule": "photos", "severity": "notice",
                  "message": f"{len(agreeing)} photos read the same castle; each part of the confidence is the best photo's"})
    rect = {**ref.rectification, "factors": factors, "photos": photos}
    if confidence < CONFIDENCE_THRESHOLD:  # (then the surest photo was refused too: confidence >= its own)
        refusal = f"every photo read the same castle, but not clearly enough: {ref.refusal}"
        return replace(ref, castle=None, score=None, refusal=refusal, tentative_castle=reference, confidence=confidence,
                       timings=timings, findings=notes + ref.findings, rectification=rect)
    return replace(ref, castle=reference, score=score_castle(reference), refusal=None, tentative_castle=None,
                   confidence=confidence, timings=timings, findings=notes + ref.findings, rectification=rect,
                   unsure_absent_walls=[], towers_to_check=[], unsure_absent_towers=[])
