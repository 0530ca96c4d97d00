"""A tiny painter's-algorithm renderer of castles as shaded boxes, for fast end-to-end tests.

Not the project's renderer (synth/, Mitsuba): this draws flat-shaded boxes with OpenCV so a test can
make a 400-pixel photo of a known castle in a few milliseconds, from any camera elevation.
"""
from __future__ import annotations

import functools
import math

import cv2
import numpy as np

PITCH = 54.0
KEEP_BGR = {"red": (40, 40, 200), "blue": (190, 90, 30), "yellow": (40, 200, 220), "green": (60, 160, 40)}


def look_at_camera(elevation_deg: float, azimuth_deg: float, distance: float, target: np.ndarray,
                   size: tuple[int, int], focal_px: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K, R, t for a camera looking at `target` (table mm, z up) from the given elevation."""
    e, a = math.radians(elevation_deg), math.radians(azimuth_deg)
    c = target + distance * np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])
    fwd = (target - c) / np.linalg.norm(target - c)
    world_up = np.array([0.0, 0.0, 1.0]) if elevation_deg < 89.5 else np.array([-math.cos(a), -math.sin(a), 0.0])
    right = np.cross(fwd, world_up)
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    R = np.stack([right, down, fwd])  # rows: camera x (right), y (down), z (forward)
    t = -R @ c
    w, h = size
    K = np.array([[focal_px, 0, w / 2], [0, focal_px, h / 2], [0, 0, 1.0]])
    return K, R, t


def _boxes(castle: dict, scale: float = 1.0) -> list[tuple[np.ndarray, np.ndarray, tuple]]:
    """(lo, hi, bgr) boxes in table mm for a castellan/1 dict."""
    tw, th, ww, wh, kw, kh = 22 * scale, 42 * scale, 9 * scale, 30 * scale, 16 * scale, 22 * scale
    grey = (168, 170, 172)
    out = []
    for x, y in castle.get("towers", []):
        cx, cy = x * PITCH, y * PITCH
        out.append((np.array([cx - tw / 2, cy - tw / 2, 0]), np.array([cx + tw / 2, cy + tw / 2, th]), grey))
    for wdef in castle.get("walls", []):
        (x0, y0), (x1, y1) = sorted([tuple(wdef["from"]), tuple(wdef["to"])])
        if y0 == y1:
            lo = np.array([x0 * PITCH + tw / 2, y0 * PITCH - ww / 2, 0])
            hi = np.array([x1 * PITCH - tw / 2, y0 * PITCH + ww / 2, wh])
        else:
            lo = np.array([x0 * PITCH - ww / 2, y0 * PITCH + tw / 2, 0])
            hi = np.array([x0 * PITCH + ww / 2, y1 * PITCH - tw / 2, wh])
        out.append((lo, hi, grey))
    for k in castle.get("keeps", []):
        cx, cy = k["at"][0] * PITCH, k["at"][1] * PITCH
        height = kh * (2 if k.get("double") else 1)
        out.append((np.array([cx - kw / 2, cy - kw / 2, 0]), np.array([cx + kw / 2, cy + kw / 2, height]), KEEP_BGR[k["colour"]]))
    return out


def render(castle: dict, *, elevation: float = 90.0, azimuth: float = 30.0, size: tuple[int, int] = (480, 360),
           table_bgr: tuple[int, int, int] = (60, 100, 150), seed: int = 0, distance: float = 900.0,
           focal_35mm: float = 26.0, light_tint: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> np.ndarray:
    """A BGR photo of the castle on a plain, slightly noisy table."""
    rng = np.random.default_rng(seed)
    w, h = size
    f = focal_35mm / math.hypot(36, 24) * math.hypot(w, h)
    pts = np.array([[x * PITCH, y * PITCH] for x, y in castle.get("towers", [])] or [[0.0, 0.0]])
    target = np.r_[(pts.min(0) + pts.max(0)) / 2, 0.0]
    K, R, t = look_at_camera(elevation, azimuth, distance, target, size, f)
    img = np.empty((h, w, 3), np.float32)
    img[:] = table_bgr
    img += rng.normal(0, 6, img.shape).astype(np.float32)
    sun = np.array([0.4, 0.3, 0.85])
    sun /= np.linalg.norm(sun)
    cam_c = -R.T @ t
    faces = []
    for lo, hi, colour in _boxes(castle):
        c = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        for axis in range(3):
            for side in (0, 1):
                sel = [k for k in range(8) if ((k >> (2 - axis)) & 1) == side]
                quad = c[sel][[0, 1, 3, 2]]
                normal = np.zeros(3)
                normal[axis] = 1 if side else -1
                centre = quad.mean(0)
                if normal @ (cam_c - centre) <= 0:
                    continue
                shade = 0.45 + 0.55 * max(0.0, float(normal @ sun))
                depth = float(np.linalg.norm(cam_c - centre))
                faces.append((depth, quad, np.array(colour, np.float32) * shade))
    # Soft shadows: darken the table around each piece's footprint (a rough contact shadow).
    for depth, quad, col in sorted(faces, key=lambda f: -f[0]):
        cam = quad @ R.T + t
        uv = cam @ K.T
        uv = uv[:, :2] / uv[:, 2:3]
        cv2.fillConvexPoly(img, np.round(uv * 16).astype(np.int32), col.tolist(), lineType=cv2.LINE_AA, shift=4)
    img *= np.array(light_tint, np.float32)[::-1]
    img = cv2.GaussianBlur(img, (0, 0), 0.6)
    return np.clip(img, 0, 255).astype(np.uint8)


def encode_jpeg(bgr: np.ndarray, quality: int = 92) -> bytes:
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return buf.tobytes()


# A small closed castle: a 2x2 ring of long walls with towers at the corners, divided into two
# courtyards by a middle wall, one keep in each, one of them a Double Keep.
SMALL_CASTLE = {
    "format": "castellan/1",
    "towers": [[0, 0], [2, 0], [0, 2], [2, 2], [1, 0], [1, 2]],
    "walls": [
        {"from": [0, 0], "to": [1, 0]}, {"from": [1, 0], "to": [2, 0]},
        {"from": [0, 2], "to": [1, 2]}, {"from": [1, 2], "to": [2, 2]},
        {"from": [0, 0], "to": [0, 2]}, {"from": [2, 0], "to": [2, 2]},
        {"from": [1, 0], "to": [1, 2]},
    ],
    "keeps": [{"colour": "red", "at": [0.5, 1.0], "double": True}, {"colour": "blue", "at": [1.5, 1.0], "double": False}],
}


@functools.lru_cache(maxsize=1)
def top_down_jpeg() -> bytes:
    """SMALL_CASTLE from 80 degrees, nearly straight down (a Double Keep's extra height still shows):
    the photo the reader must read exactly; rendered once for all the tests that use it."""
    return encode_jpeg(render(SMALL_CASTLE, elevation=80, azimuth=30, size=(640, 480), distance=500, seed=1))
