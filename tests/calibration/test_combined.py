"""Several photos of one set made one profile: each size where the photos agree."""
from __future__ import annotations

import numpy as np
import pytest

from calibration.combined import combine_measurements
from calibration.pieces import PieceMeasureError, PieceMeasurement
from calibration.profiles import ColourProfile, KeepColour, PieceProfile, PieceSize

TRUE = {"tower": (22.0, 22.0, 42.0), "short_wall": (32.0, 9.0, 30.0), "long_wall": (86.0, 9.0, 30.0),
        "keep": (16.0, 16.0, 22.0)}


def _measurement(off: dict | None = None, heights_unmeasured: tuple[str, ...] = (),
                 red_lab=(45.0, 60.0, 40.0)) -> PieceMeasurement:
    """What calibrate pieces gives on one photo: the true sizes, `off` (kind: (dl, dw, dh) mm) added."""
    sizes = {}
    for kind, (length, width, height) in TRUE.items():
        dl, dw, dh = (off or {}).get(kind, (0.0, 0.0, 0.0))
        sizes[kind] = PieceSize((length + dl, width + dw), None if kind in heights_unmeasured else height + dh)
    colours = ColourProfile({"red": KeepColour(red_lab, 33.7)})
    return PieceMeasurement(PieceProfile(**sizes), colours, [], (0.0, 0.0, 500.0), "profile",
                            np.zeros((4, 4, 3), np.uint8), [])


def test_a_height_one_photo_misread_is_left_out_and_named():
    photos = [_measurement({"tower": (0.1, 0.1, 0.4)}), _measurement({"tower": (-0.1, -0.1, 3.8)}),
              _measurement({"tower": (0.0, 0.0, -0.2)})]
    c = combine_measurements(photos, ["a.jpg", "b.jpg", "c.jpg"])
    assert c.pieces.tower.height_mm == pytest.approx(42.1)  # the mean of the two that agree
    assert c.pieces.tower.footprint_mm == pytest.approx((22.0, 22.0))
    assert any("tower's height was left out" in n and "45.8 mm on b.jpg" in n for n in c.notes)
    assert c.spread_mm["tower"][2] == pytest.approx(4.0)


def test_two_photos_that_disagree_on_a_height_leave_it_unmeasured():
    c = combine_measurements([_measurement({"keep": (0, 0, 0.5)}), _measurement({"keep": (0, 0, 3.5)})], ["a", "b"])
    assert c.pieces.keep.height_mm is None  # the reader then uses the usual proportions
    assert any("disagree on the keep's height" in n for n in c.notes)
    assert c.pieces.tower.height_mm == pytest.approx(42.0)


def test_a_height_one_photo_could_not_show_comes_from_the_others():
    c = combine_measurements([_measurement(heights_unmeasured=("tower",)), _measurement({"tower": (0, 0, 0.6)})],
                             ["a", "b"])
    assert c.pieces.tower.height_mm == pytest.approx(42.6)


def test_photos_of_different_sets_are_refused_naming_the_photos():
    bigger = {k: (v[0] * 0.12, v[1] * 0.12, v[2] * 0.12) for k, v in TRUE.items()}
    with pytest.raises(PieceMeasureError, match=r"disagree on the tower's length.*on a\.jpg.*on b\.jpg.*same pieces"):
        combine_measurements([_measurement(), _measurement(bigger)], ["a.jpg", "b.jpg"])


def test_keep_colours_are_averaged_over_the_photos():
    c = combine_measurements([_measurement(red_lab=(44.0, 58.0, 40.0)), _measurement(red_lab=(46.0, 62.0, 40.0))],
                             ["a", "b"])
    assert c.colours.keeps["red"].lab == pytest.approx((45.0, 60.0, 40.0))
    assert c.colours.keeps["red"].hue_deg == pytest.approx(33.7, abs=0.1)  # the mean's hue, not one photo's
