"""Piece sizes and keep colours from synthetic photos of pieces standing on the mat."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.benchmark import wall_boxes
from calibration.synthetic import box_corners, look_at, render_mat_view
from calibration.pieces import PieceMeasureError, measure_pieces
from calibration.profiles import FORMAT, CameraProfile, load_profile
from castellan.cli import main

SIZE = (1280, 960)
K = np.array([[1000.0, 0, 640.0], [0, 1000.0, 480.0], [0, 0, 1]])
CAMERA = CameraProfile(SIZE, (1000.0, 1000.0), (640.0, 480.0))
GREY = (140, 140, 145)
KEEP_BGR = {"red": (40, 40, 200), "blue": (200, 90, 30), "yellow": (30, 200, 230), "green": (60, 170, 50)}


def _scene(scale: float, keeps=("red", "blue", "yellow", "green"), walls=True):
    """A set whose pieces are `scale` times the spec's, turned at various angles on an A4 mat."""
    s = scale
    boxes = [(box_corners(60, 60, 22 * s, 22 * s, 30), 42 * s, GREY)]
    truth = {"tower": (22 * s, 22 * s), "keep": (16 * s, 16 * s)}
    if walls:
        # With their end tabs: the length measured is the body's, tower face to tower face.
        boxes += wall_boxes(150, 70, 32 * s, 9 * s, 30 * s, 120, GREY, 22 * s)
        boxes += wall_boxes(100, 140, 86 * s, 9 * s, 30 * s, 35, GREY, 22 * s)
        truth.update(short_wall=(32 * s, 9 * s), long_wall=(86 * s, 9 * s))
    spots = [(50, 220, 20), (90, 232, 60), (140, 215, 110), (172, 160, 150)]
    for name, (x, y, a) in zip(keeps, spots):
        boxes.append((box_corners(x, y, 16 * s, 16 * s, a), 22 * s, KEEP_BGR[name]))
    return boxes, truth


def _photo(boxes, elevation, azimuth, distance, light=(1.0, 1.0, 1.0), seed=0):
    R, t = look_at((105, 148), elevation, azimuth, distance)
    return render_mat_view(K, R, t, SIZE, boxes=boxes, light=light, seed=seed)


def _assert_footprints(m, truth: dict, abs_mm: float) -> None:
    for kind, (length, width) in truth.items():
        got = getattr(m.pieces, kind).footprint_mm
        assert got[0] == pytest.approx(length, abs=abs_mm), kind
        assert got[1] == pytest.approx(width, abs=abs_mm), kind


@pytest.mark.parametrize("scale, elevation, azimuth, distance", [(0.9, 60, 90, 420), (1.12, 70, 300, 460)])
def test_piece_sizes_within_one_millimetre(scale, elevation, azimuth, distance):
    boxes, truth = _scene(scale)
    m = measure_pieces(_photo(boxes, elevation, azimuth, distance), camera=CAMERA)
    _assert_footprints(m, truth, abs_mm=1.0)
    assert m.pieces.lattice_pitch_mm == pytest.approx(54 * scale, abs=1.5)
    # The height is what removes the parallax; it is measured too, if less precisely.
    assert m.pieces.tower.height_mm == pytest.approx(42 * scale, rel=0.15)


def test_a_lamps_shadows_do_not_inflate_the_sizes():
    # Without the shadow check, shadows joined to the pieces made them read 6 to 14 mm too big.
    boxes, truth = _scene(1.0)
    R, t = look_at((105, 148), 65, 300, 440)
    photo = render_mat_view(K, R, t, SIZE, boxes=boxes, shadow=(55, 30, 0.35))
    m = measure_pieces(photo, camera=CAMERA)
    _assert_footprints(m, truth, abs_mm=1.5)


def test_a_hard_shadow_is_refused_rather_than_measured():
    # A lamp close by leaves the paper around the pieces in deep shadow, whose edges pass for a
    # piece's: the user is told to light the mat evenly instead of getting a wrong size.
    boxes, _ = _scene(1.0)
    R, t = look_at((105, 148), 65, 300, 440)
    photo = render_mat_view(K, R, t, SIZE, boxes=boxes, shadow=(60, 30, 0.8))
    with pytest.raises(PieceMeasureError, match="shadow.*light the mat evenly"):
        measure_pieces(photo, camera=CAMERA)


def test_keep_colours_are_named_and_measured_under_the_users_light():
    boxes, _ = _scene(1.0)
    warm = (0.7, 0.9, 1.0)  # BGR gains of a warm lamp
    neutral = measure_pieces(_photo(boxes, 75, 45, 480), camera=CAMERA).colours
    lamp = measure_pieces(_photo(boxes, 75, 45, 480, light=warm, seed=1), camera=CAMERA).colours
    assert set(neutral.keeps) == set(lamp.keeps) == {"red", "blue", "yellow", "green"}
    # The lamp shifts the measured colours (that is why the profile is measured under it) ...
    assert abs(lamp.keeps["blue"].lab[2] - neutral.keeps["blue"].lab[2]) > 5
    # ... and each profile names keeps seen under its own light.
    for prof in (neutral, lamp):
        for name, kc in prof.keeps.items():
            assert prof.classify(kc.lab)[0] == name


def test_missing_pieces_and_a_missing_mat_are_clear_errors():
    boxes, _ = _scene(1.0, walls=False)
    with pytest.raises(PieceMeasureError, match="found 1 grey pieces.*one short wall and one long wall"):
        measure_pieces(_photo(boxes, 70, 45, 460), camera=CAMERA)
    blank = np.full((480, 640, 3), 120, np.uint8)
    with pytest.raises(PieceMeasureError, match="no calibration mat found"):
        measure_pieces(blank)


def test_calibrate_pieces_command_adds_pieces_and_colours_to_a_profile(tmp_path: Path, capsys):
    boxes, _ = _scene(1.0, keeps=("red", "green"))
    photo = tmp_path / "pieces.png"
    cv2.imwrite(str(photo), _photo(boxes, 65, 200, 440))
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"format": FORMAT, "camera": CAMERA.to_json()}))
    debug = tmp_path / "debug.png"
    assert main(["calibrate", "pieces", str(photo), "-o", str(profile), "--profile", str(profile),
                 "--debug", str(debug)]) == 0
    out = capsys.readouterr().out
    assert "lattice pitch" in out and "no keep measured for blue, yellow" in out
    prof = load_profile(profile)
    assert prof.camera == CAMERA  # kept
    assert prof.pieces.tower.footprint_mm[0] == pytest.approx(22, abs=1.0)
    assert set(prof.colours.keeps) == {"red", "green"}
    assert cv2.imread(str(debug)) is not None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": FORMAT, "camera": {"focal_px": [1, 1]}}))
    assert main(["calibrate", "pieces", str(photo), "-o", str(profile), "--profile", str(bad)]) == 2
    assert "camera.image_size is missing" in capsys.readouterr().err
