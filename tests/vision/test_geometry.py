"""Camera pose from a plane homography, and the lattice fit on a top view."""
from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from tests.vision.toyscene import look_at_camera
from vision.camera import Camera, focal_from_homography
from vision.lattice import fit_lattice


@pytest.mark.parametrize("elevation", [40.0, 60.0, 85.0])
def test_pose_from_homography_reproduces_the_camera(elevation):
    K, R, t = look_at_camera(elevation, 25.0, 800.0, np.array([50.0, 20.0, 0.0]), (640, 480), 520.0)
    H = K @ np.stack([R[:, 0], R[:, 1], t], axis=1)
    cam = Camera.from_homography(H, K)
    assert cam.elevation_deg == pytest.approx(elevation, abs=0.2)
    pts = np.array([[0, 0, 0], [100, 50, 42], [-30, 80, 30.0]])
    truth = (pts @ R.T + t) @ K.T
    truth = truth[:, :2] / truth[:, 2:]
    assert np.allclose(cam.project(pts), truth, atol=1e-6)
    assert cam.centre[2] > 0  # heights point towards the camera


def test_focal_length_is_recovered_from_an_oblique_homography():
    K, R, t = look_at_camera(45.0, 10.0, 700.0, np.zeros(3), (640, 480), 600.0)
    H = K @ np.stack([R[:, 0], R[:, 1], t], axis=1)
    assert focal_from_homography(H, 640, 480) == pytest.approx(600.0, rel=0.01)


def test_lattice_pitch_angle_and_origin_from_a_grid_of_towers():
    ppu, pitch, angle = 4.0, 13.0, math.radians(20)
    mask = np.zeros((400, 400), np.uint8)
    u, v = np.array([math.cos(angle), math.sin(angle)]), np.array([-math.sin(angle), math.cos(angle)])
    origin = np.array([48.0, 31.0])
    for i in range(-2, 5):
        for j in range(-2, 5):
            p = (origin + pitch * (i * u + j * v)) * ppu
            box = cv2.boxPoints(((p[0], p[1]), (5.3 * ppu, 5.3 * ppu), math.degrees(angle)))
            cv2.fillConvexPoly(mask, np.round(box).astype(np.int32), 1)
            q = (origin + pitch * ((i + 0.5) * u + j * v)) * ppu
            wall = cv2.boxPoints(((q[0], q[1]), (pitch * ppu, 2.2 * ppu), math.degrees(angle)))
            cv2.fillConvexPoly(mask, np.round(wall).astype(np.int32), 1)
    lat = fit_lattice(mask.astype(bool), ppu, (9.0, 20.0))
    assert lat is not None
    assert lat.pitch == pytest.approx(pitch, rel=0.02)
    # Axes are only defined modulo 90 degrees.
    assert (math.degrees(lat.angle - angle) + 45) % 90 - 45 == pytest.approx(0, abs=1.0)
    ij = lat.to_lattice(origin[None])[0]
    assert np.allclose(ij, np.round(ij), atol=0.12)
