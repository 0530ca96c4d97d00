"""Several photos of one set made one profile: each size where the photos agree."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from calibration.combined import combine_measurements, triangulated_height
from calibration.pieces import PieceFit, PieceMeasureError, PieceMeasurement
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


# Three cameras round the mat, as (x, y, height above the mat) in mat mm: two from one long side,
# one from the other (as a user walks round the table), 60-75 degrees up.
CAMERAS = [(105.0, -250.0, 480.0), (60.0, -190.0, 560.0), (100.0, 440.0, 520.0)]
TOWER_TOP = np.array([80.0, 120.0, 42.0])


def _slid(top: np.ndarray, camera, lower_mm: float) -> np.ndarray:
    """The top moved down its line of sight from `camera` by `lower_mm` in height: how a fit that
    took the foot of a side for the print places it (away from the camera, lower), fitting the photo
    about as well."""
    cam = np.asarray(camera)
    return top + (top - cam) * lower_mm / (cam[2] - top[2])


def test_the_lines_of_sight_through_each_photos_top_meet_at_the_true_height():
    slid = [_slid(TOWER_TOP, c, dh) for c, dh in zip(CAMERAS, (1.2, 0.6, 1.8))]
    assert max(TOWER_TOP[2] - p[2] for p in slid) > 1.5  # each photo alone measures it low
    assert triangulated_height(slid, CAMERAS) == pytest.approx(42.0, abs=0.01)
    # Photos from about one place do not pin the height down; lines that miss each other by more
    # than a millimetre do not see one top (a photo misread).
    assert triangulated_height(slid[:2], [CAMERAS[0], (107.0, -248.0, 482.0)]) is None
    assert triangulated_height([slid[0], slid[1] + (3.0, 0.0, 0.0), slid[2]], CAMERAS) is None
    assert triangulated_height(slid[:1], CAMERAS[:1]) is None


def _photo_with_tower(top: np.ndarray, camera, unseen_height: str | None = None) -> PieceMeasurement:
    m = _measurement({"tower": (0.0, 0.0, top[2] - 42.0)})
    m.fits.append(PieceFit("tower", (float(top[0]), float(top[1])), 0.0, 22.0, 22.0, float(top[2]), 1.0, 0.0,
                           unseen_height=unseen_height))
    # The photo's camera as calibrate pieces gives it: in the mat's frame, its z axis into the table.
    m.camera_centre_mm = (camera[0], camera[1], -camera[2])
    return m


def test_combined_photos_give_a_height_where_their_lines_of_sight_meet():
    photos = [_photo_with_tower(_slid(TOWER_TOP, c, dh), c) for c, dh in zip(CAMERAS, (1.2, 0.6, 1.8))]
    c = combine_measurements(photos, ["a.jpg", "b.jpg", "c.jpg"])
    assert c.pieces.tower.height_mm == pytest.approx(42.0, abs=0.01)  # the photos' mean: 40.8
    assert any("tower's height is 42.0 mm where the photos' lines of sight" in n and "40.8 mm" in n for n in c.notes)
    assert c.pieces.long_wall.height_mm == pytest.approx(30.0)  # no fits: as the photos agree

    # A height a photo left unmeasured (its top seen past the sheet's edge) takes no part.
    photos[2] = _photo_with_tower(_slid(TOWER_TOP, CAMERAS[2], 1.8), CAMERAS[2], unseen_height="edge")
    photos[2].pieces = replace(photos[2].pieces, tower=replace(photos[2].pieces.tower, height_mm=None))
    c = combine_measurements(photos, ["a.jpg", "b.jpg", "c.jpg"])
    assert c.pieces.tower.height_mm == pytest.approx(41.1, abs=0.05)  # a and b come from one side


def test_a_top_seen_where_its_photo_left_the_height_unmeasured_still_meets_the_others():
    # A photo that left the tower's height unmeasured because the foot of its sides looked like the
    # print still shows where its top is: its line of sight counts. One whose top was seen past the
    # sheet's edge does not.
    photos = [_photo_with_tower(_slid(TOWER_TOP, c, dh), c) for c, dh in zip(CAMERAS, (1.2, 0.6, 1.8))]
    photos[2].fits[0].unseen_height = "foot"
    c = combine_measurements(photos, ["a.jpg", "b.jpg", "c.jpg"])
    assert c.pieces.tower.height_mm == pytest.approx(42.0, abs=0.01)
    photos[2].fits[0].unseen_height = "edge"
    c = combine_measurements(photos, ["a.jpg", "b.jpg", "c.jpg"])
    assert c.pieces.tower.height_mm != pytest.approx(42.0, abs=0.5)
