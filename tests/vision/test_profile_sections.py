"""A calibration profile's piece and colour sections change the reading; without them nothing changes.

Tiny images: flat colour patches for the keep labels, tests/vision/toyscene.py for whole photos.
"""
from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from skimage import color

from calibration.profiles import PieceProfile, PieceSize, Profile, ProfileError, parse_profile
from tests.vision.toyscene import top_down_jpeg
from vision import read_photo
from vision.masks import HUE_CENTRES, KEEP_COLOURS, compute_masks
from vision.profile import settings_from_profile
from vision.reconstruct import TOWER_HALF, Dims

RED, YELLOW = KEEP_COLOURS.index("red") + 1, KEEP_COLOURS.index("yellow") + 1
# A red keep's print run (or light) that photographs orange: OpenCV hue about 15, a little nearer
# the typical yellow (27) than the typical red (0).
ORANGE_BGR = (0, 128, 255)
TRUE_YELLOW_BGR = (0, 215, 235)


def _lab(bgr: tuple[int, int, int]) -> list[float]:
    rgb = np.array(bgr[::-1], float).reshape(1, 1, 3) / 255.0
    return [float(v) for v in color.rgb2lab(rgb).ravel()]


def _patches_photo() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A light table, a grey piece (the white balance's neutral reference) and two keep patches."""
    img = np.full((120, 160, 3), (200, 205, 210), np.uint8)
    img[20:100, 20:60] = (120, 120, 120)
    orange = np.zeros(img.shape[:2], bool)
    orange[40:60, 80:100] = True
    yellow = np.zeros(img.shape[:2], bool)
    yellow[70:90, 110:130] = True
    img[orange], img[yellow] = ORANGE_BGR, TRUE_YELLOW_BGR
    return img, orange, yellow


def _majority(label: np.ndarray, where: np.ndarray) -> int:
    return int(np.bincount(label[where], minlength=5).argmax())


def _colour_profile(name: str, bgr: tuple[int, int, int]) -> Profile:
    return parse_profile({"format": "castellan-profile/1", "colours": {"keeps": {name: {"lab": _lab(bgr)}}}})


def test_measured_keep_hue_labels_a_shifted_keep_that_the_typical_hues_miss():
    img, orange, yellow = _patches_photo()
    without = compute_masks(img)
    assert _majority(without.keep_label, orange) == YELLOW  # the typical hues call it yellow
    settings = settings_from_profile(_colour_profile("red", ORANGE_BGR))
    with_profile = compute_masks(img, keep_lab=settings.keep_lab)
    assert _majority(with_profile.keep_label, orange) == RED
    # A real yellow keep is still yellow: the profile moved red's centre, not every colour.
    assert _majority(with_profile.keep_label, yellow) == YELLOW


def test_hue_centres_are_a_parameter_defaulting_to_the_typical_hues():
    img, orange, _ = _patches_photo()
    assert (compute_masks(img, hue_centres=HUE_CENTRES).keep_label == compute_masks(img).keep_label).all()
    moved = dict(HUE_CENTRES, red=15.0)
    assert _majority(compute_masks(img, hue_centres=moved).keep_label, orange) == RED
    with pytest.raises(ValueError, match="no hue for green"):
        compute_masks(img, hue_centres={"red": 0.0, "yellow": 27.0, "blue": 112.0})


def test_a_profile_without_piece_or_colour_sections_keeps_the_defaults():
    cam_only = parse_profile({"format": "castellan-profile/1", "camera": {
        "image_size": [640, 480], "focal_px": [600.0, 600.0], "principal_point_px": [320.0, 240.0]}})
    for profile in (None, cam_only):
        s = settings_from_profile(profile)
        assert s.dims == Dims() and s.keep_lab is None and s.pitch_mm is None


def _pieces(tower: float, short: float, keep: float = 16.0) -> PieceProfile:
    return PieceProfile(PieceSize((tower, tower), 42.0), PieceSize((short, 9.0), 30.0),
                        PieceSize((2 * (tower + short) - tower, 9.0), 30.0), PieceSize((keep, keep), 22.0))


def test_piece_profile_sets_the_sizes_in_lattice_steps():
    # Fat towers and short walls: the pitch is still tower + short wall = 54 mm.
    s = settings_from_profile(Profile(pieces=_pieces(27.0, 27.0, keep=18.0)))
    assert s.dims.tower_half == pytest.approx(13.5 / 54)
    assert s.dims.keep_half == pytest.approx(9.0 / 54)
    assert s.pitch_mm == pytest.approx(54.0)
    lo, hi = s.pitch_mm_range((40.5, 67.5))
    assert 48 < lo < 54 < hi < 60  # narrowed around the measured pitch


@pytest.fixture(scope="module")
def top_down() -> bytes:
    return top_down_jpeg()


def test_piece_profile_changes_the_piece_sizes_the_reconstruction_uses(top_down):
    plain = read_photo(top_down).rectification["piece_scale"]
    fat = read_photo(top_down, profile=Profile(pieces=_pieces(27.0, 27.0))).rectification["piece_scale"]
    # The fit starts from the profile's towers (23 % wider than nominal) and refines the size against
    # the photo by about 10 % at most, so it ends clearly wider than without the profile.
    assert 0.9 <= plain <= 1.1
    assert fat >= plain * 1.05


def test_a_true_profile_still_reads_the_castle(top_down):
    nominal = _pieces(22.0, 32.0)
    keeps = {"red": {"lab": _lab((40, 40, 200))}, "blue": {"lab": _lab((190, 90, 30))}}
    profile = parse_profile({"format": "castellan-profile/1", "pieces": nominal.to_json(), "colours": {"keeps": keeps}})
    without, with_profile = read_photo(top_down), read_photo(top_down, profile=profile)
    assert with_profile.refusal is None, with_profile.refusal
    assert with_profile.to_json()["players"] == without.to_json()["players"]


def test_a_camera_profiles_focal_length_is_used_and_reported_as_the_profiles(top_down):
    # The toy scene's lens: 26 mm (35 mm film equivalent) on 640 x 480; the profile says 3 % longer.
    f = 1.03 * 26.0 / math.hypot(36, 24) * math.hypot(640, 480)
    profile = parse_profile({"format": "castellan-profile/1", "camera": {
        "image_size": [640, 480], "focal_px": [f, f], "principal_point_px": [320.0, 240.0]}})
    rect = read_photo(top_down, profile=profile).rectification
    assert rect["focal_source"] == "profile"
    assert rect["focal_px"] == pytest.approx(f, abs=0.1)
    assert read_photo(top_down).rectification["focal_source"] != "profile"


@pytest.mark.parametrize("section, field", [
    ({"tower": {"footprint_mm": [60, 60]}, "short_wall": {"footprint_mm": [32, 9]}}, "pieces.tower.footprint_mm"),
    ({"keep": {"footprint_mm": [16, 16], "height_mm": 80}}, "pieces.keep.height_mm"),
    ({"short_wall": {"footprint_mm": [32, 25]}}, "pieces.short_wall.footprint_mm"),
])
def test_a_piece_section_no_set_could_have_is_refused_naming_the_field(section, field):
    pieces = {"tower": {"footprint_mm": [22, 22]}, "short_wall": {"footprint_mm": [32, 9]},
              "long_wall": {"footprint_mm": [86, 9]}, "keep": {"footprint_mm": [16, 16]}}
    pieces.update(section)
    with pytest.raises(ProfileError, match=field.replace(".", r"\.")) as err:
        parse_profile({"format": "castellan-profile/1", "pieces": pieces}, source="set.json")
    assert "set.json" in str(err.value) and "calibrate pieces" in str(err.value)


def test_read_photo_refuses_a_bad_piece_section_built_in_code(top_down):
    with pytest.raises(ProfileError, match=r"pieces\.keep\.footprint_mm"):
        read_photo(top_down, profile=Profile(pieces=_pieces(22.0, 32.0, keep=40.0)))

