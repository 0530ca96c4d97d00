"""One set's pieces measured on several photos, made one profile (`castellan calibrate pieces A B C`).

A photo's fit errs on its own: the heights most (on held-out renders of sessions 44-45 a piece's
height was off by 0.8-1.5 mm on average and by up to 16 mm, where 92-98 % of footprints were within
1 mm), and differently from another view of the same pieces. So each size is taken where the photos agree: the mean of the
values within half AGREE_MM of their median (so no two of them further apart than AGREE_MM),
provided they are most of the photos that measured it. A
size the photos do not agree on is a height left unmeasured (the reader then uses the usual
proportions) or, for a footprint, a refusal naming the photos; a note names every value left out.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
