"""A tiny painter's-algorithm renderer of castles as flat-shaded boxes.

Not the project's photo renderer (synth.render, Mitsuba): this draws shaded boxes with OpenCV, so a test
can make a 400-pixel photo of a known castle in a few milliseconds from any camera elevation, and the
pixel model's training (vision.train_pixel_net) sees plastic with no texture at all and hard shading,
which the Mitsuba renders never show.
"""
from __future__ import annotations

import math

import cv2
import numpy as np

PITCH = 54.0
KEEP_BGR = {"red": (40, 40, 200), "blue": (190, 90, 30), "yellow": (40, 200, 220), "green": (60, 160, 40)}
GREY_BGR = (168, 170, 172)


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


def _boxes(castle: dict, scale: float = 1.0, grey: tuple = GREY_BGR, keep_bgr: dict | None = None
           ) -> list[tuple[np.ndarray, np.ndarray, tuple, int]]:
    """(lo, hi, bgr, class) boxes in table mm for a castellan/1 dict (class 1 grey plastic, 2 keep)."""
    tw, th, ww, wh, kw, kh = 22 * scale, 42 * scale, 9 * scale, 30 * scale, 16 * scale, 22 * scale
    keep_bgr = keep_bgr or KEEP_BGR
    out = []
    for x, y in castle.get("towers", []):
        cx, cy = x * PITCH, y * PITCH
        out.append((np.array([cx - tw / 2, cy - tw / 2, 0]), np.array([cx + tw / 2, cy + tw / 2, th]), grey, 1))
    for wdef in castle.get("walls", []):
        (x0, y0), (x1, y1) = sorted([tuple(wdef["from"]), tuple(wdef["to"])])
        if y0 == y1:
            lo = np.array([x0 * PITCH + tw / 2, y0 * PITCH - ww / 2, 0])
            hi = np.array([x1 * PITCH - tw / 2, y0 * PITCH + ww / 2, wh])
        else:
            lo = np.array([x0 * PITCH - ww / 2, y0 * PITCH + tw / 2, 0])
            hi = np.array([x0 * PITCH + ww / 2, y1 * PITCH - tw / 2, wh])
        out.append((lo, hi, grey, 1))
    for k in castle.get("keeps", []):
        cx, cy = k["at"][0] * PITCH, k["at"][1] * PITCH
        height = kh * (2 if k.get("double") else 1)
        out.append((np.array([cx - kw / 2, cy - kw / 2, 0]), np.array([cx + kw / 2, cy + kw / 2, height]), keep_bgr[k["colour"]], 2))
    return out


def render(castle: dict, *, elevation: float = 90.0, azimuth: float = 30.0, size: tuple[int, int] = (480, 360),
           table_bgr: tuple[int, int, int] = (60, 100, 150), seed: int = 0, distance: float = 900.0,
           focal_35mm: float = 26.0, light_tint: tuple[float, float, float] = (1.0, 1.0, 1.0),
           grey_bgr: tuple[int, int, int] = GREY_BGR, keep_bgr: dict | None = None, noise: float = 6.0,
           with_labels: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """A BGR photo of the castle on a plain, slightly noisy table; with `with_labels` also what each
    pixel shows (0 table, 1 grey plastic, 2 keep)."""
    rng = np.random.default_rng(seed)
    w, h = size
    f = focal_35mm / math.hypot(36, 24) * math.hypot(w, h)
    pts = np.array([[x * PITCH, y * PITCH] for x, y in castle.get("towers", [])] or [[0.0, 0.0]])
    target = np.r_[(pts.min(0) + pts.max(0)) / 2, 0.0]
    K, R, t = look_at_camera(elevation, azimuth, distance, target, size, f)
    img = np.empty((h, w, 3), np.float32)
    img[:] = table_bgr
    img += rng.normal(0, noise, img.shape).astype(np.float32)
    labels = np.zeros((h, w), np.uint8)
    sun = np.array([0.4, 0.3, 0.85])
    sun /= np.linalg.norm(sun)
    cam_c = -R.T @ t
    faces = []
    for lo, hi, colour, cls in _boxes(castle, grey=grey_bgr, keep_bgr=keep_bgr):
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
                faces.append((depth, quad, np.array(colour, np.float32) * shade, cls))
    for depth, quad, col, cls in sorted(faces, key=lambda f: -f[0]):
        cam = quad @ R.T + t
        uv = cam @ K.T
        uv = np.round(uv[:, :2] / uv[:, 2:3] * 16).astype(np.int32)
        cv2.fillConvexPoly(img, uv, col.tolist(), lineType=cv2.LINE_AA, shift=4)
        cv2.fillConvexPoly(labels, uv, cls, shift=4)
    img *= np.array(light_tint, np.float32)[::-1]
    img = cv2.GaussianBlur(img, (0, 0), 0.6)
    img = np.clip(img, 0, 255).astype(np.uint8)
    return (img, labels) if with_labels else img


def encode_jpeg(bgr: np.ndarray, quality: int = 92) -> bytes:
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return buf.tobytes()


def _varied_colour(bgr: tuple, rng: np.random.Generator) -> tuple[float, float, float]:
    """A keep colour as another print run or light shows it: hue turned by up to 15 OpenCV units
    (a red that photographs orange), saturation and brightness changed."""
    hsv = cv2.cvtColor(np.uint8([[bgr]]), cv2.COLOR_BGR2HSV)[0, 0].astype(np.float32)
    hsv[0] = (hsv[0] + rng.uniform(-15, 15)) % 180
    hsv[1] = np.clip(hsv[1] * rng.uniform(0.7, 1.1), 60, 255)
    hsv[2] = np.clip(hsv[2] * rng.uniform(0.7, 1.25), 40, 255)
    return tuple(float(v) for v in cv2.cvtColor(hsv.astype(np.uint8)[None, None], cv2.COLOR_HSV2BGR)[0, 0])


def random_scene(rng: np.random.Generator, size: tuple[int, int] = (640, 480)) -> tuple[np.ndarray, np.ndarray]:
    """A castle of a random game, at any turn, on a random plain table, from 30-90 degrees, in tinted
    light, with plastic and keeps of varied tone: (BGR photo, labels as `render` gives them)."""
    from scoring.generate import play_random_game

    turns = play_random_game(int(rng.integers(1 << 31)))
    castle = turns[int(rng.integers(len(turns) // 10, len(turns)))].castle.to_json()
    x0, y0 = np.min(castle["towers"], axis=0)
    x1, y1 = np.max(castle["towers"], axis=0)
    extent = PITCH * float(max(x1 - x0, y1 - y0, 2))
    # Dark tables are in spec but rare among colours drawn channel by channel: a fifth are near black.
    table = tuple(float(v) for v in (rng.uniform(8, 40, 3) if rng.random() < 0.2 else rng.uniform(20, 235, 3)))
    grey = float(rng.uniform(110, 225))
    keep_bgr = {c: _varied_colour(bgr, rng) for c, bgr in KEEP_BGR.items()}
    return render(castle, elevation=float(rng.uniform(30, 90)), azimuth=float(rng.uniform(0, 360)), size=size,
                  table_bgr=table, seed=int(rng.integers(1 << 31)), distance=extent * float(rng.uniform(0.9, 1.6)) + 200,
                  light_tint=tuple(float(v) for v in rng.uniform(0.8, 1.15, 3)), grey_bgr=(grey, grey, grey),
                  keep_bgr=keep_bgr, noise=float(rng.uniform(2, 8)), with_labels=True)
