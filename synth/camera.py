"""Pinhole camera in OpenCV conventions: x right, y down, z forward; pixel centres at integers.

World frame: millimetres, the table is z = 0, z points up. `R`, `t` map world to camera
(X_cam = R X_world + t), `K` maps camera to pixels. Focal lengths are given as 35 mm equivalents,
as phones report them (diagonal 43.27 mm).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FULL_FRAME_DIAGONAL_MM = 43.2666


@dataclass
class Camera:
    K: np.ndarray
    R: np.ndarray
    t: np.ndarray
    width: int
    height: int
    elevation_deg: float
    azimuth_deg: float
    roll_deg: float
    focal_mm: float  # 35 mm equivalent

    @property
    def centre(self) -> np.ndarray:
        return -self.R.T @ self.t

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World points (N, 3) -> pixels (N, 2) and depth along the optical axis (N,)."""
        cam = np.asarray(points, float) @ self.R.T + self.t
        uvw = cam @ self.K.T
        return uvw[:, :2] / uvw[:, 2:3], cam[:, 2]

    def fov_x_deg(self) -> float:
        return float(np.degrees(2 * np.arctan(self.width / 2 / self.K[0, 0])))

    def to_json(self) -> dict:
        return {
            "K": np.round(self.K, 4).tolist(),
            "R": np.round(self.R, 8).tolist(),
            "t": np.round(self.t, 4).tolist(),
            "width": self.width,
            "height": self.height,
            "elevation_deg": round(self.elevation_deg, 3),
            "azimuth_deg": round(self.azimuth_deg, 3),
            "roll_deg": round(self.roll_deg, 3),
            "focal_mm": round(self.focal_mm, 3),
            "centre_mm": np.round(self.centre, 3).tolist(),
            "convention": "OpenCV: X_cam = R X_world + t, x right, y down, z forward; pixel centres at "
                          "integer coordinates; world in mm, table plane z = 0, z up",
        }


def intrinsics(width: int, height: int, focal_mm: float) -> np.ndarray:
    f = focal_mm * np.hypot(width, height) / FULL_FRAME_DIAGONAL_MM
    return np.array([[f, 0, (width - 1) / 2], [0, f, (height - 1) / 2], [0, 0, 1]], float)


def rotation(elevation_deg: float, azimuth_deg: float, roll_deg: float) -> np.ndarray:
    """World->camera rotation for a camera looking at the target from (elevation, azimuth).

    Azimuth is measured in the table plane from +x towards +y, of the camera's position seen from
    the target. At elevation 90 the image's up points away from the azimuth direction, so the
    transition to a top-down view is continuous.
    """
    e, a = np.radians(elevation_deg), np.radians(azimuth_deg)
    towards_camera = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    forward = -towards_camera
    # "Up" in the image: the horizontal direction away from the camera tilted up; well defined at 90.
    away = np.array([-np.cos(a), -np.sin(a), 0.0])
    up_hint = np.cos(e) * np.array([0, 0, 1.0]) + np.sin(e) * away
    right = np.cross(forward, up_hint)
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    R = np.stack([right, down, forward])
    r = np.radians(roll_deg)
    roll = np.array([[np.cos(r), -np.sin(r), 0], [np.sin(r), np.cos(r), 0], [0, 0, 1]])
    return roll @ R


def fit_camera(points: np.ndarray, target: np.ndarray, width: int, height: int, focal_mm: float,
               elevation_deg: float, azimuth_deg: float, roll_deg: float, margin: float) -> Camera:
    """Place the camera so every point lies inside the frame with `margin` (fraction) to spare."""
    K = intrinsics(width, height, focal_mm)
    R = rotation(elevation_deg, azimuth_deg, roll_deg)
    forward = R[2]

    def camera_at(d: float) -> Camera:
        centre = target - forward * d
        return Camera(K, R, -R @ centre, width, height, elevation_deg, azimuth_deg, roll_deg, focal_mm)

    def fits(d: float) -> bool:
        uv, z = camera_at(d).project(points)
        if np.any(z <= 1.0):
            return False
        mx, my = margin * width, margin * height
        return bool(np.all((uv[:, 0] >= mx) & (uv[:, 0] <= width - 1 - mx)
                           & (uv[:, 1] >= my) & (uv[:, 1] <= height - 1 - my)))

    lo, hi = 50.0, 200.0
    while not fits(hi):
        hi *= 2
        if hi > 1e6:
            raise ValueError("cannot fit the castle in the frame")
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return camera_at(hi)
