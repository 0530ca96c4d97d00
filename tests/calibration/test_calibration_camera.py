"""Camera intrinsics from synthetic photos of the mat with a known camera."""
from __future__ import annotations

import io
import math
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from calibration.synthetic import look_at, render_mat_view
from calibration.camera import (CalibrationError, MatFocal, calibrate_camera, camera_for_photo, default_camera,
                                exif_focal_35mm, focal_from_mat, undistort_image)
from calibration.mat import find_mat
from calibration.outlines import MAT_FOCAL_MAX_RELATIVE_ERROR, _camera_without_profile
from calibration.pieces import PieceMeasureError
from calibration.profiles import CameraProfile, Profile, load_profile
from castellan.cli import main

SIZE = (640, 480)
# Elevation, azimuth (degrees), distance (mm), offset of the aim point on the sheet (mm).
POSES = [(55, 90, 300, (0, 10)), (45, 30, 330, (15, -20)), (65, 150, 290, (-20, 15)),
         (42, 210, 350, (10, 25)), (70, 270, 300, (-10, -25)), (50, 330, 320, (20, 0))]


def _views(K, dist=None, poses=POSES):
    out = []
    for i, (el, az, d, (dx, dy)) in enumerate(poses):
        R, t = look_at((105 + dx, 148 + dy), el, az, d)
        out.append(render_mat_view(K, R, t, SIZE, dist=dist, seed=i))
    return out


@pytest.mark.parametrize("f", [560.0, 700.0])
def test_focal_length_within_two_percent(f):
    K = np.array([[f, 0, 322.0], [0, f, 236.0], [0, 0, 1]])
    cal = calibrate_camera(_views(K))
    cam = cal.profile
    assert cam.image_size == SIZE and cam.views == len(POSES)
    assert cam.focal_px[0] == pytest.approx(f, rel=0.02)
    assert cam.focal_px[1] == pytest.approx(f, rel=0.02)
    assert cam.reprojection_error_px < 0.5
    assert abs(cam.principal_point_px[0] - 322) < 15 and abs(cam.principal_point_px[1] - 236) < 15


def test_lens_distortion_is_measured_and_undistorting_straightens_the_mat():
    K = np.array([[600.0, 0, 318.0], [0, 600.0, 242.0], [0, 0, 1]])
    dist = np.array([-0.25, 0.08, 0, 0, 0])  # strong barrel distortion
    views = _views(K, dist)
    cam = calibrate_camera(views).profile
    assert cam.focal_px[0] == pytest.approx(600, rel=0.02)
    assert cam.distortion[0] == pytest.approx(-0.25, abs=0.05)
    # A homography fits the undistorted mat much better than the raw one.
    raw = find_mat(views[0])
    fixed = find_mat(undistort_image(views[0], cam))
    assert raw is not None and fixed is not None
    assert fixed.rms_mm < raw.rms_mm / 2
    # The same correction done on the points (what find_mat does with a camera) agrees.
    on_points = find_mat(views[0], camera_matrix=cam.matrix(), dist_coeffs=cam.dist_coeffs())
    assert on_points.rms_mm < raw.rms_mm / 2


def test_too_few_photos_with_the_mat_is_a_clear_error():
    K = np.array([[600.0, 0, 320.0], [0, 600.0, 240.0], [0, 0, 1]])
    views = _views(K, poses=POSES[:2]) + [np.full((SIZE[1], SIZE[0]), 128, np.uint8)]
    with pytest.raises(CalibrationError, match=r"read in 2 of 3 photos.*photo 3: no mat found"):
        calibrate_camera(views)
    with pytest.raises(CalibrationError, match="different sizes"):
        calibrate_camera([views[0], views[1][:400]])
    with pytest.raises(CalibrationError, match="no photos"):
        calibrate_camera([])


def test_calibrate_camera_command_writes_a_profile(tmp_path: Path, capsys):
    K = np.array([[640.0, 0, 320.0], [0, 640.0, 240.0], [0, 0, 1]])
    paths = []
    for i, v in enumerate(_views(K)[:4]):
        p = tmp_path / f"mat{i}.png"
        cv2.imwrite(str(p), v)
        paths.append(str(p))
    out = tmp_path / "phone.json"
    assert main(["calibrate", "camera", *paths, "-o", str(out)]) == 0
    assert "reprojection error" in capsys.readouterr().out
    prof = load_profile(out)
    assert prof.camera.focal_px[0] == pytest.approx(640, rel=0.02)
    assert json.loads(out.read_text())["format"] == "castellan-profile/1"
    # Bad inputs: a missing photo, a file that is not a photo.
    assert main(["calibrate", "camera", str(tmp_path / "nope.jpg"), "-o", str(out)]) == 2
    assert "nope.jpg: no such file" in capsys.readouterr().err
    (tmp_path / "notes.jpg").write_text("hello")
    assert main(["calibrate", "camera", str(tmp_path / "notes.jpg"), "-o", str(out)]) == 2
    assert "not a readable photo" in capsys.readouterr().err


def test_without_a_profile_exif_focal_or_a_phone_default_is_used():
    buf = io.BytesIO()
    exif = Image.Exif()
    exif.get_ifd(0x8769)[0xA405] = 52  # a 2x tele lens
    Image.new("RGB", (400, 300)).save(buf, "JPEG", exif=exif)
    f35 = exif_focal_35mm(buf.getvalue())
    assert f35 == 52
    cam, source = camera_for_photo(4000, 3000, None, f35)
    assert source == "exif"
    # 52 mm equivalent on a 5000-pixel diagonal: 52 / 43.27 * 5000.
    assert cam.focal_px[0] == pytest.approx(52 / 43.267 * 5000, rel=0.001)
    plain = io.BytesIO()
    Image.new("RGB", (40, 30)).save(plain, "PNG")
    assert exif_focal_35mm(plain.getvalue()) is None
    assert exif_focal_35mm(b"not an image") is None
    cam, source = camera_for_photo(4000, 3000)
    assert source == "default" and cam == default_camera(4000, 3000)
    prof = Profile(camera=CameraProfile((2000, 1500), (1600.0, 1600.0), (1000.0, 750.0)))
    cam, source = camera_for_photo(4000, 3000, prof)
    assert source == "profile" and cam.focal_px[0] == pytest.approx(3200)
    # A profile from another photo mode (4:3) does not fit a 16:9 photo: fall back, and say so.
    cam, source = camera_for_photo(4000, 2250, prof, 26.0)
    assert source == "exif (profile is for another photo mode)"


def _mat_points_seen(elevation: float, noise_px: float, rng: np.random.Generator, f: float = 1000.0):
    """The mat's grid of points (mm) and where a 1280 x 960 camera at `elevation` sees them, read
    `noise_px` off at random."""
    xs, ys = np.meshgrid(np.linspace(20, 190, 8), np.linspace(20, 277, 10))
    mat = np.stack([xs.ravel(), ys.ravel()], axis=1)
    K = np.array([[f, 0, 639.5], [0, f, 479.5], [0, 0, 1]])
    R, t = look_at((105, 148), elevation, 30, 420)
    img, _ = cv2.projectPoints(np.c_[mat, np.zeros(len(mat))], cv2.Rodrigues(R)[0], t, K, None)
    img = img.reshape(-1, 2) + rng.normal(0, noise_px, (len(mat), 2))
    return img, mat


def _mat_focal(elevation: float, rng: np.random.Generator, noise_px: float = 0.5, points=slice(None)) -> MatFocal:
    img, mat = _mat_points_seen(elevation, noise_px, rng)
    img, mat = img[points], mat[points]
    H, _ = cv2.findHomography(mat, img, 0)
    return focal_from_mat(img, mat, 1280, 960, H)


def test_the_mats_focal_length_comes_with_an_honest_standard_error():
    # The error is what the user is told (+/- x %) and what decides between the mat, EXIF and a
    # refusal, so it must match how far the focal length really scatters with the points' noise.
    rng = np.random.default_rng(7)
    for elevation in (60, 78):
        found = [_mat_focal(elevation, rng) for _ in range(30)]
        focals = np.array([m.focal_px for m in found])
        stated = np.median([m.relative_error for m in found])
        scatter = np.std(focals / 1000.0)
        assert 0.6 * scatter < stated < 1.6 * scatter, (elevation, stated, scatter)
        assert abs(np.median(focals) / 1000.0 - 1) < 2 * stated


def test_a_mat_seen_from_straight_above_gives_no_usable_focal_length():
    # 86 degrees, a third of the points, read a pixel off: as on held-out render calib_v2_any_3828_v1,
    # the homography still gives a focal length, but a wrong one.
    steep = _mat_focal(86, np.random.default_rng(0), noise_px=1.0, points=slice(None, None, 3))
    assert abs(steep.focal_px / 1000 - 1) > 0.2 and steep.relative_error > MAT_FOCAL_MAX_RELATIVE_ERROR
    rng = np.random.default_rng(3)
    oblique = _mat_focal(60, rng)
    assert oblique.relative_error < 0.01
    assert oblique.focal_px == pytest.approx(1000, rel=3 * oblique.relative_error)
    assert _mat_focal(60, rng, points=[0, 7, 72, 79]).relative_error == math.inf  # four corners: no scatter to measure


def test_without_a_profile_the_mats_focal_length_is_used_while_it_shows_then_exifs():
    notes: list[str] = []
    K, source, error = _camera_without_profile(MatFocal(1100.0, 0.01), 28.0, 1280, 960, notes)
    assert (source, K[0, 0], error, notes) == ("mat", 1100.0, 0.01, [])
    # Unsure, but the perspective shows: used, its error passed on (heights then decide for themselves),
    # and the user told how unsure it is.
    K, source, error = _camera_without_profile(MatFocal(1100.0, 0.10), None, 1280, 960, notes)
    assert (source, K[0, 0], error) == ("mat", 1100.0, 0.10) and "+/-10.0 %" in notes[-1]
    # Past three standard errors the mat gives no focal length: EXIF's is used, else the photo is refused.
    exif_px = default_camera(1280, 960, 28.0).matrix()[0, 0]
    for unsure in (MatFocal(4000.0, 3.0), MatFocal(None, math.inf)):
        K, source, error = _camera_without_profile(unsure, 28.0, 1280, 960, notes)
        assert (source, K[0, 0], error) == ("exif", exif_px, 0.0) and "EXIF" in notes[-1]
        with pytest.raises(PieceMeasureError, match="no focal length known"):
            _camera_without_profile(unsure, None, 1280, 960, [])
