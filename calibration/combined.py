"""One set's pieces measured on several photos, made one profile (`castellan calibrate pieces A B C`).

A photo's fit errs on its own: the heights most (on held-out renders of sessions 44-45 a piece's
height was off by 0.8-1.5 mm on average and by up to 16 mm, where 92-98 % of footprints were within
1 mm), and differently from another view of the same pieces. So each size is taken where the photos agree: the mean of the
values within half AGREE_MM of their median (so no two of them further apart than AGREE_MM),
provided they are most of the photos that measured it. A
size the photos do not agree on is a height left unmeasured (the reader then uses the usual
proportions) or, for a footprint, a refusal naming the photos; a note names every value left out.

The grey pieces' heights are first found where the photos' lines of sight meet (triangulated_height).
One photo sees a piece's top well, but a fit can slide the piece away from the camera and lower it together, along
the line of sight through its top, and still fit the photo about as well: where the foot of a side
looks like the print beside it, nothing in that photo says how far (the grey pieces' heights came
out a median 0.5-0.6 mm low, session 62). The pieces stand still on the mat between the photos, so
each photo's fitted top lies on a line of sight through the true top, and where the lines from
photos taken from different places meet is the top: its height, with no slide left. Where the lines
do not pin it down (fewer than two photos show its top, or all taken from about one place) or miss
each other (a photo misread), the photos' agreed value stands.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from calibration.pieces import AGREE_MM, PieceMeasureError, PieceMeasurement
from calibration.profiles import PIECE_KINDS, ColourProfile, KeepColour, PieceProfile, PieceSize, _lab_hue

_SIZE_NAMES = ("length", "width", "height")


@dataclass
class CombinedMeasurement:
    pieces: PieceProfile
    colours: ColourProfile
    photos: list[str]  # the photos combined (those measured)
    spread_mm: dict[str, tuple[float | None, float | None, float | None]]  # largest less smallest value
    notes: list[str] = field(default_factory=list)


def agreed_value(values: Sequence[float], names: Sequence[str], what: str,
                 notes: list[str]) -> float | None:
    """The mean of `values` within AGREE_MM / 2 of their median when they are most of them, else None.
    `names` name the photo of each value, `what` the size (for the notes)."""
    if not values:
        return None
    mid = float(np.median(values))
    agree = [abs(v - mid) <= AGREE_MM / 2 for v in values]
    if sum(agree) * 2 <= len(values):
        notes.append(f"the photos disagree on the {what} ("
                     + ", ".join(f"{v:.1f} mm on {n}" for v, n in zip(values, names)) + ")")
        return None
    left_out = [f"{v:.1f} mm on {n}" for v, n, ok in zip(values, names, agree) if not ok]
    if left_out:
        notes.append(f"the {what} was left out where it disagreed with the other photos ({', '.join(left_out)})")
    return float(np.mean([v for v, ok in zip(values, agree) if ok]))


# A grey piece's true top lies within about half a millimetre of the line of sight through its fitted
# top (development renders of session 65, the 38 grey heights measured on 21 photos of 7 sets: a
# median 0.19 mm, at most 0.42). Lines that miss each other by more than LINES_MISS_MM do not see one
# top; lines whose meeting point's height moves by more than HEIGHT_PER_MISS mm per mm that a line
# is off (nearly parallel lines: photos from about one place; 1.4-3.3 for those sets' photos from
# both sides, 21 for two from one side) do not pin the height down.
LINES_MISS_MM = AGREE_MM / 2
HEIGHT_PER_MISS = 4.0


def triangulated_height(tops_mm: Sequence[Sequence[float]], cameras_mm: Sequence[Sequence[float]]) -> float | None:
    """The height of the point nearest (least squares) to the lines from each camera through its
    photo's fitted top (mat mm: x, y, height above the mat), or None when the lines do not pin it
    down (fewer than two, HEIGHT_PER_MISS) or miss each other (LINES_MISS_MM)."""
    if len(tops_mm) < 2:
        return None
    normal, rhs, lines = np.zeros((3, 3)), np.zeros(3), []
    for top, cam in zip(tops_mm, cameras_mm):
        top, cam = np.asarray(top, float), np.asarray(cam, float)
        d = (top - cam) / np.linalg.norm(top - cam)
        across = np.eye(3) - np.outer(d, d)  # the part of a vector across the line
        normal += across
        rhs += across @ cam
        lines.append((cam, across))
    if np.linalg.cond(normal) > 1e8:
        return None
    inverse = np.linalg.inv(normal)
    if math.sqrt(inverse[2, 2]) > HEIGHT_PER_MISS:
        return None
    point = inverse @ rhs
    if max(float(np.linalg.norm(across @ (point - cam))) for cam, across in lines) > LINES_MISS_MM:
        return None
    return float(point[2])


# Why a photo may leave a piece's height unmeasured while its fit still places the top where the
# photo shows it (calibration.pieces._UNSEEN_HEIGHT): seen from nearly straight above (its line of
# sight then pins the top's place), the foot of its sides looking like the print (the slide above),
# or the photo fitting it about as well a little taller or shorter. Not a top seen past the sheet or
# behind another piece, grown over its shadow, or found from a part of it. On the development sets
# of session 65 these photos let the lines pin 17 grey heights instead of 10, as close (mean error
# 0.24 mm against 0.25, all within 1 mm).
TOP_SEEN = ("above", "foot", "flat")


def _tops_seen(measurements: Sequence[PieceMeasurement], kind: str):
    """Each photo's fitted top of the piece `kind` where the photo shows it (its height measured, or
    left unmeasured for a reason in TOP_SEEN), and that photo's camera, both as (x, y, height above
    the mat) in mat mm."""
    tops, cameras = [], []
    for m in measurements:
        for f in m.fits:
            if f.kind == kind and (f.unseen_height is None or f.unseen_height in TOP_SEEN):
                tops.append((*f.centre_mm, f.height_mm))
                # The mat's frame has its z axis into the table.
                cameras.append((m.camera_centre_mm[0], m.camera_centre_mm[1], -m.camera_centre_mm[2]))
    return tops, cameras


def _lines_of_sight_heights(measurements: Sequence[PieceMeasurement], lengths: dict[str, float]) -> dict[str, float]:
    """The grey pieces' heights where the photos' lines of sight through each one's fitted top meet
    (those they pin down). Both walls are one moulding: one height, each wall's counted by its length.
    Not the keeps: their coloured sides stand out from the print, so each photo's foot holds its fit
    (their heights showed no bias: a median 0.0 mm at 55-70 degrees over the held-out benchmarks
    committed up to session 64), and on the development sets of session 65 their lines of sight met
    lower than the photos agreed (mean error 0.24 mm against 0.22)."""
    out = {}
    for kind in ("tower", "short_wall", "long_wall"):
        h = triangulated_height(*_tops_seen(measurements, kind))
        if h is not None:
            out[kind] = h
    walls = [k for k in ("short_wall", "long_wall") if k in out]
    if walls:
        one = sum(out[k] * lengths[k] for k in walls) / sum(lengths[k] for k in walls)
        out.update({k: one for k in ("short_wall", "long_wall")})
    return out


def combine_measurements(measurements: Sequence[PieceMeasurement], names: Sequence[str]) -> CombinedMeasurement:
    """One profile from measurements of the same set on several photos (`names`: each photo's name).

    Raises PieceMeasureError when the photos disagree on a footprint: they cannot all show this set."""
    if not measurements:
        raise ValueError("no measurements to combine")
    notes: list[str] = []
    sizes, spread = {}, {}
    for kind in PIECE_KINDS:
        values: list[list[float]] = [[], [], []]
        owners: list[list[str]] = [[], [], []]
        for m, name in zip(measurements, names):
            size = getattr(m.pieces, kind)
            for i, v in enumerate((*size.footprint_mm, size.height_mm)):
                if v is not None:
                    values[i].append(float(v))
                    owners[i].append(name)
        agreed = []
        for i in range(3):
            agreed.append(agreed_value(values[i], owners[i], f"{kind.replace('_', ' ')}'s {_SIZE_NAMES[i]}", notes))
            if agreed[i] is None and i < 2:
                raise PieceMeasureError(f"{notes[-1]}: are they photos of the same pieces? Retake the photo that "
                                        "differs, or add one, so that most photos agree")
        sizes[kind] = PieceSize((agreed[0], agreed[1]), agreed[2])
        spread[kind] = tuple(max(v) - min(v) if v else None for v in values)
    seen = _lines_of_sight_heights(measurements, {k: sizes[k].footprint_mm[0] for k in PIECE_KINDS})
    for kind, height in seen.items():
        was = sizes[kind].height_mm
        notes.append(f"the {kind.replace('_', ' ')}'s height is {height:.1f} mm where the photos' lines of sight "
                     f"through its top meet (" + ("not agreed by the photos alone" if was is None
                                                   else f"{was:.1f} mm as the photos measured it alone") + ")")
        sizes[kind] = replace(sizes[kind], height_mm=height)
    for m, name in zip(measurements, names):
        notes.extend(f"{name}: {note}" for note in m.notes)
    return CombinedMeasurement(PieceProfile(**sizes), _mean_colours([m.colours for m in measurements]),
                               list(names), spread, notes)


def _mean_colours(profiles: Sequence[ColourProfile]) -> ColourProfile:
    """Each keep colour's mean CIELAB over the photos that measured it (the light is the same)."""
    out = {}
    for colour in dict.fromkeys(c for p in profiles for c in p.keeps):
        lab = np.mean([p.keeps[colour].lab for p in profiles if colour in p.keeps], axis=0)
        out[colour] = KeepColour(tuple(float(v) for v in lab), _lab_hue(list(lab)))
    return ColourProfile(out)
