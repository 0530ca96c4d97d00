"""The camera model: intrinsics, the pose over the table plane, and projection of 3-D table points.

Table coordinates are (x, y) on the table plane and z above it, in whatever unit the plane was
measured in (mat millimetres, or lattice steps once the lattice is known). Knowing the pose is what
lets the pipeline reason about where a piece *stands*: a tower's top leans away from its footprint by
an amount that depends on its height and the camera, and projecting 3-D boxes models exactly that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

# A typical phone main camera: 26 mm equivalent focal length (on the 43.3 mm film diagonal).
DEFAULT_FOCAL_35MM = 26.0


def intrinsics(width: int, height: int, focal_px: float | None = None) -> np.ndarray:
    """Pinhole K with the principal point at the image centre (phones are close to that)."""
    if focal_px is None:
        focal_px = DEFAULT_FOCAL_35MM / math.hypot(36.0, 24.0) * math.hypot(width, height)
    return np.array([[focal_px, 0.0, width / 2.0], [0.0, focal_px, height / 2.0], [0.0, 0.0, 1.0]])


def focal_from_homography(H: np.ndarray, width: int, height: int,
                          principal_point: tuple[float, float] | None = None) -> float | None:
    """Focal length (px) from one plane homography (table -> image), square pixels.

    `principal_point` defaults to (width / 2, height / 2), the convention of `intrinsics`; OpenCV's
    calibration (calibration.camera) puts the centre at ((width - 1) / 2, (height - 1) / 2).
    Uses Zhang's two constraints (r1 . r2 = 0, |r1| = |r2|) solved for f alone. Returns None when the
    view is so close to straight-down that f is not observable (then any sensible f gives the same
    picture of the table, and the caller's default is fine).
    """
    cx, cy = principal_point if principal_point is not None else (width / 2.0, height / 2.0)
    u = inverse_square_focal(H, cx, cy)
    if u <= 0:
        return None
    f = 1.0 / math.sqrt(u)
    h = _centred(H, cx, cy)
    h1, h2 = h[:, 0], h[:, 1]
    diag = math.hypot(width, height)
    # Conditioning: how much the perspective terms matter relative to the affine ones.
    persp = math.hypot(h1[2], h2[2]) * diag / max(1e-12, math.hypot(*h1[:2]) + math.hypot(*h2[:2]))
    if persp < 0.05 or not (0.4 * diag < f < 4.0 * diag):
        return None
    return f


def inverse_square_focal(H: np.ndarray, cx: float, cy: float) -> float:
    """Least-squares u = 1/f^2 from a plane homography (table -> image), square pixels, principal point
    (cx, cy); not positive when the homography has no perspective to give a focal length."""
    h = _centred(H, cx, cy)
    h1, h2 = h[:, 0], h[:, 1]
    # With K = diag(f, f, 1): (h1x h2x + h1y h2y)/f^2 + h1z h2z = 0  and
    # (h1x^2 + h1y^2 - h2x^2 - h2y^2)/f^2 + h1z^2 - h2z^2 = 0.
    a = np.array([h1[0] * h2[0] + h1[1] * h2[1], h1[0] ** 2 + h1[1] ** 2 - h2[0] ** 2 - h2[1] ** 2])
    b = -np.array([h1[2] * h2[2], h1[2] ** 2 - h2[2] ** 2])
    denom = float(a @ a)
    return float(a @ b) / denom if denom > 0 else 0.0


def _centred(H: np.ndarray, cx: float, cy: float) -> np.ndarray:
    return np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]], np.float64) @ np.asarray(H, np.float64)


@dataclass(frozen=True)
class Camera:
    """K and the pose of the table frame: X_cam = R @ X_table + t, with R = [r1 r2 up]."""

    K: np.ndarray
    R: np.ndarray
    t: np.ndarray

    @classmethod
    def from_homography(cls, H: np.ndarray, K: np.ndarray) -> "Camera":
        """Pose from the homography table (x, y) -> image pixels, for known K.

        The table frame may be left-handed (mat millimetres have y pointing down the sheet); the third
        axis is chosen to point from the table towards the camera, so z is always height above it.
        """
        B = np.linalg.solve(K, H)
        lam = 2.0 / (np.linalg.norm(B[:, 0]) + np.linalg.norm(B[:, 1]))
        if B[2, 2] * lam < 0:  # the table origin must be in front of the camera
            lam = -lam
        r1, r2, t = lam * B[:, 0], lam * B[:, 1], lam * B[:, 2]
        # Closest pair of orthonormal columns (polar decomposition of [r1 r2]).
        u, _, vt = np.linalg.svd(np.stack([r1, r2], axis=1), full_matrices=False)
        r12 = u @ vt
        r1, r2 = r12[:, 0], r12[:, 1]
        up = np.cross(r1, r2)
        if float(up @ (-t)) < 0:
            up = -up
        return cls(K=np.asarray(K, float), R=np.stack([r1, r2, up], axis=1), t=np.asarray(t, float))

    @property
    def centre(self) -> np.ndarray:
        """Camera centre in table coordinates (z is its height above the table)."""
        return -np.linalg.solve(self.R, self.t)

    @property
    def elevation_deg(self) -> float:
        """Angle of the optical axis above the table plane (90 = looking straight down)."""
        axis_table = np.linalg.solve(self.R, np.array([0.0, 0.0, 1.0]))
        return math.degrees(math.asin(min(1.0, abs(axis_table[2]) / np.linalg.norm(axis_table))))

    def project(self, pts: np.ndarray) -> np.ndarray:
        """Table points (N, 3) -> image pixels (N, 2)."""
        p = np.asarray(pts, float).reshape(-1, 3)
        cam = p @ self.R.T + self.t
        uvw = cam @ self.K.T
        return uvw[:, :2] / uvw[:, 2:3]

    def plane_homography(self, z: float = 0.0) -> np.ndarray:
        """Homography from the plane at height z, (x, y) -> image pixels."""
        return self.K @ np.stack([self.R[:, 0], self.R[:, 1], self.R[:, 2] * z + self.t], axis=1)

    def image_to_plane(self, uv: np.ndarray, z: float = 0.0) -> np.ndarray:
        """Image pixels (N, 2) -> (x, y) on the plane at height z."""
        Hinv = np.linalg.inv(self.plane_homography(z))
        return cv2.perspectiveTransform(np.asarray(uv, float).reshape(-1, 1, 2), Hinv).reshape(-1, 2)

    def scaled(self, factor: float) -> "Camera":
        """The same camera for table units `factor` times larger (e.g. mm -> lattice steps)."""
        return Camera(self.K, self.R, self.t / factor)

    def with_table_frame(self, A: np.ndarray) -> "Camera":
        """Re-express the pose for new table coordinates q with old = A[:, :2] @ q + A[:, 2].

        A is a 2x3 similarity (rotation, uniform scale s, translation); heights scale by s too.
        """
        M, o = np.asarray(A[:, :2], float), np.asarray(A[:, 2], float)
        s = math.sqrt(abs(np.linalg.det(M)))
        R_new = np.stack([self.R[:, :2] @ M[:, 0], self.R[:, :2] @ M[:, 1], self.R[:, 2] * s], axis=1)
        t_new = self.R[:, :2] @ o + self.t
        # Keep R orthonormal: divide by the scale and fold it into t.
        return Camera(self.K, R_new / s, t_new / s)

    def adjusted(self, pivot: np.ndarray, tilt_x: float = 0.0, tilt_y: float = 0.0, focal_scale: float = 1.0) -> "Camera":
        """A nearby camera that sees the table point `pivot` at the same pixel.

        tilt_x / tilt_y turn the table about the pivot around the camera's x / y axes (radians);
        focal_scale changes the focal length and moves the camera back by the same factor (a "dolly
        zoom"), which keeps the castle's size and changes only the perspective. Used to refine a
        pose from vanishing points against the photo.
        """
        P = np.asarray(pivot, float)
        cx, sx, cy, sy = math.cos(tilt_x), math.sin(tilt_x), math.cos(tilt_y), math.sin(tilt_y)
        Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
        Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
        R_new = Ry @ Rx @ self.R
        Pc = self.R @ P + self.t
        # The pivot's camera-frame position, pushed away along its ray by the focal scale.
        t_new = focal_scale * Pc - R_new @ P
        K = self.K.copy()
        K[0, 0] *= focal_scale
        K[1, 1] *= focal_scale
        return Camera(K, R_new, t_new)
