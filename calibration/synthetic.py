"""Synthetic photos of the mat (and of boxes standing on it) from a known pinhole camera.

The mat texture is warped by the exact plane-to-image homography K [r1 r2 t]; boxes are drawn as
their visible faces, far faces first. The calibration tests and `python -m calibration.benchmark`
use it because they need exactly known cameras, poses and piece sizes (no shadows, no texture: the
physically based renderer in `synth` is for the vision pipeline).
"""
from __future__ import annotations

import cv2
import numpy as np

from calibration.mat import mat_image


def look_at(target_mm, elevation_deg: float, azimuth_deg: float, distance_mm: float):
    """World = mat mm (x right, y down the sheet, z into the table). Returns R, t (world -> camera)."""
    el, az = np.radians(elevation_deg), np.radians(azimuth_deg)
    target = np.array([target_mm[0], target_mm[1], 0.0])
    centre = target + distance_mm * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), -np.sin(el)])
    z = target - centre
    z /= np.linalg.norm(z)
    down = np.array([0.0, 0.0, 1.0])
    y = down - z * (down @ z)
    if np.linalg.norm(y) < 1e-6:  # straight down: pick image "down" along the sheet's y
        y = np.array([0.0, 1.0, 0.0]) - z * z[1]
    y /= np.linalg.norm(y)
    x = np.cross(y, z)
    R = np.stack([x, y, z])
    return R, -R @ centre


def _supersampled(K: np.ndarray, ss: int) -> np.ndarray:
    """K for an image `ss` times bigger whose ss x ss pixel blocks average to the original's pixels."""
    A = np.array([[ss, 0, (ss - 1) / 2], [0, ss, (ss - 1) / 2], [0, 0, 1]])
    return A @ K


def box_corners(cx: float, cy: float, length: float, width: float, angle_deg: float) -> np.ndarray:
    """Footprint corners (4, 2) of a piece centred at (cx, cy) mm, its length along angle_deg."""
    a = np.radians(angle_deg)
    ax, ay = np.array([np.cos(a), np.sin(a)]), np.array([-np.sin(a), np.cos(a)])
    return np.array([[cx, cy]]) + np.array([[sl * length / 2] for sl in (1, 1, -1, -1)]) * ax \
        + np.array([[sw * width / 2] for sw in (1, -1, -1, 1)]) * ay


def render_mat_view(K, R, t, size, *, paper="a4", dist=None, table=95, ppm=6.0, blur=0.7, boxes=(), seed=0,
                    light=(1.0, 1.0, 1.0), shadow: tuple | None = None, foot_shade: float = 1.0):
    """A grayscale or BGR photo of the mat (and optional boxes) from camera K, R, t.

    boxes: sequence of (corners_xy_mm (4, 2) in order, height_mm, bgr colour[, bottom_mm[, top_shade]]);
    the faces are shaded by fixed factors (top brightest), the top also by `top_shade` (default 1: a
    wall's top between its merlons lies in their shade). A box with a bottom above the mat (a wall's
    merlon on its body) stands on another and is drawn after the boxes standing on the mat. light: BGR gains of the light (BGR images only).
    shadow: (elevation_deg, azimuth_deg, darkening 0..1[, bgr tint]) of a lamp whose soft shadows the
    boxes cast; the tint scales the darkening per channel (a warm lamp's shadows are lit by the rest
    of the room, so they are bluer than the paper around them: less darkening in blue).
    foot_shade: how lit the sides of a box standing on the mat are at its foot, next to their top (the
    piece and the table hide part of the sky from a side's foot); in between it changes linearly.
    """
    w, h = size
    # Render at four times the size and shrink: a camera integrates over each pixel, a plain warp
    # would alias the squares' edges into dotted lines.
    ss = 4
    K_out = np.asarray(K, np.float64)
    K = _supersampled(K_out, ss)
    w, h = w * ss, h * ss
    sheet, _ = mat_image(paper, ppm)
    H = K @ np.column_stack([R[:, 0], R[:, 1], t])
    tex_to_mm = np.array([[1 / ppm, 0, 0.5 / ppm], [0, 1 / ppm, 0.5 / ppm], [0, 0, 1]])
    Ht = H @ tex_to_mm
    img = cv2.warpPerspective(sheet, Ht, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    mask = cv2.warpPerspective(np.full_like(sheet, 255), Ht, (w, h), flags=cv2.INTER_NEAREST)
    # Print is not pure black and white.
    img = (25 + img.astype(np.float32) * (215 / 255)).astype(np.uint8)
    img = np.where(mask > 0, img, np.uint8(table))
    img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR) if boxes else img
    if boxes and shadow is not None:
        # Each box's shadow on the table: its corners pushed along the light's direction to z = 0.
        el, az, dark = np.radians(shadow[0]), np.radians(shadow[1]), float(shadow[2])
        away = -np.array([np.cos(az), np.sin(az)]) / np.tan(el)  # ground offset per mm of height
        shade = np.zeros((h, w), np.float32)
        for corners, height, *_ in boxes:
            c = np.asarray(corners, np.float64)
            pts = np.vstack([c, c + away * float(height)])
            hull = cv2.convexHull(pts.astype(np.float32)).reshape(-1, 2)
            px = cv2.perspectiveTransform(hull.reshape(-1, 1, 2).astype(np.float64), H).reshape(-1, 2)
            cv2.fillConvexPoly(shade, np.round(px * 16).astype(np.int32), 1.0, cv2.LINE_8, shift=4)
        shade = cv2.GaussianBlur(shade, (0, 0), 2.0 * ss)  # a lamp, not a point: soft edges
        tint = np.asarray(shadow[3] if len(shadow) > 3 else (1.0, 1.0, 1.0), np.float32)
        img = np.clip(img.astype(np.float32) * (1.0 - dark * shade[:, :, None] * tint), 0, 255).astype(np.uint8)
    if boxes:
        rvec, _ = cv2.Rodrigues(R)
        cam_centre = -R.T @ t
        faces = []
        for corners, height, colour, *rest in boxes:
            c = np.asarray(corners, np.float64)
            z0 = float(rest[0]) if rest else 0.0
            top_shade = float(rest[1]) if len(rest) > 1 else 1.0
            bottom = np.column_stack([c, -np.full(4, z0)])
            top = np.column_stack([c, -np.full(4, float(height))])
            depth = np.linalg.norm(top.mean(0) - cam_centre)
            faces.append((z0 > 0, depth, top, tuple(float(v) * top_shade for v in colour)))
            # A side shaded from foot to top is drawn as bands, each lit as at its middle.
            bands = 8 if foot_shade != 1.0 and z0 == 0 else 1
            for i, s in enumerate([0.8, 0.65, 0.75, 0.9]):
                # Its bands are ordered as the whole side (a box's sides do not overlap one another).
                side_depth = np.linalg.norm((bottom[i] + bottom[(i + 1) % 4] + top[i] + top[(i + 1) % 4]) / 4 - cam_centre)
                for b in range(bands):
                    lo, hi = bottom + (top - bottom) * b / bands, bottom + (top - bottom) * (b + 1) / bands
                    q = np.array([lo[i], lo[(i + 1) % 4], hi[(i + 1) % 4], hi[i]])
                    lit = s if bands == 1 else s * (foot_shade + (1.0 - foot_shade) * (b + 0.5) / bands)
                    faces.append((z0 > 0, side_depth, q, tuple(float(v) * lit for v in colour)))
        # Far to near (painter's order), raised boxes last: they hide the top they stand on.
        for _, _, q, col in sorted(faces, key=lambda f: (f[0], -f[1])):
            p, _ = cv2.projectPoints(q, rvec, t, K, None)
            cv2.fillConvexPoly(img, np.round(p.reshape(-1, 2) * 16).astype(np.int32), col, cv2.LINE_8, shift=4)
    img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    if img.ndim == 3 and tuple(light) != (1.0, 1.0, 1.0):  # a coloured light tints everything
        img = np.clip(img.astype(np.float32) * np.asarray(light, np.float32), 0, 255).astype(np.uint8)
    w, h = size
    K = K_out
    if blur:
        img = cv2.GaussianBlur(img, (0, 0), blur)
    rng = np.random.default_rng(seed)
    img = np.clip(img.astype(np.float32) + rng.normal(0, 2.0, img.shape), 0, 255).astype(np.uint8)
    if dist is not None and np.any(dist):
        # Distort: each output (distorted) pixel looks up where the pinhole image had it.
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        pts = np.stack([xs.ravel(), ys.ravel()], 1).reshape(-1, 1, 2)
        und = cv2.undistortPoints(pts, K, np.asarray(dist, np.float64), P=K).reshape(h, w, 2)
        img = cv2.remap(img, und[..., 0], und[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return img
