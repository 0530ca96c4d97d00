"""Procedural textures: table tops, the moulded stone of the grey pieces, cards and the game box.

Textures are drawn in sRGB (where colours are easy to pick) and returned as linear RGB float32, the
space the renderer works in. Each table texture comes with its physical size so one pixel maps to a
known number of millimetres on the table.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

TABLE_KINDS = ("wood", "painted", "linen", "gingham", "felt", "marble")


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    c = np.clip(np.asarray(c, np.float32), 0.0, 1.0)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4).astype(np.float32)


def value_noise(rng: np.random.Generator, size: int, cell: float, octaves: int = 4,
                stretch: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
    """Smooth fractal noise in about [-1, 1], tileable enough for our purposes, shape (size, size)."""
    out = np.zeros((size, size), np.float32)
    amp, total = 1.0, 0.0
    for _ in range(octaves):
        gx = max(2, int(size / (cell * stretch[0])))
        gy = max(2, int(size / (cell * stretch[1])))
        grid = rng.standard_normal((gy, gx)).astype(np.float32)
        out += amp * cv2.resize(grid, (size, size), interpolation=cv2.INTER_CUBIC)
        total += amp
        amp *= 0.5
        cell /= 2.0
    return out / total


@dataclass
class TableTexture:
    kind: str
    name: str
    image: np.ndarray  # linear RGB float32 (H, W, 3)
    size_mm: float  # the image spans size_mm x size_mm of table
    roughness: float  # microfacet alpha of the top coat; 1.0 means a matte diffuse surface
    rgb_srgb: tuple[float, float, float]  # main colour, for the conditions record


def _mix(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    return a[None, None, :] * (1 - t[..., None]) + b[None, None, :] * t[..., None]


def table_texture(kind: str, rng: np.random.Generator, size_px: int = 2048) -> TableTexture:
    """A table top of `kind` (one of TABLE_KINDS) with randomised colours and pattern scale."""
    n = size_px
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32)
    if kind == "wood":
        size_mm = 900.0
        palettes = {
            "oak": ((0.72, 0.55, 0.36), (0.55, 0.38, 0.22)),
            "walnut": ((0.42, 0.28, 0.18), (0.26, 0.16, 0.10)),
            "pine": ((0.86, 0.72, 0.52), (0.72, 0.55, 0.35)),
            "whitewashed": ((0.86, 0.83, 0.78), (0.70, 0.66, 0.60)),
            "cherry": ((0.62, 0.34, 0.22), (0.44, 0.22, 0.13)),
        }
        name = str(rng.choice(list(palettes)))
        light, dark = (np.array(c, np.float32) for c in palettes[name])
        plank_mm = rng.uniform(90, 220)
        px_per_mm = n / size_mm
        plank = (yy / (plank_mm * px_per_mm)).astype(int)
        # Grain: growth rings cut at a shallow angle (long wavy bands that fade in and out), fine
        # streaks along the board, and a per-plank offset so neighbouring planks do not line up.
        warp = value_noise(rng, n, 150 * px_per_mm, 3, stretch=(4.0, 1.0)) * 25 * px_per_mm
        period = rng.uniform(5, 12) * px_per_mm
        phase = (yy + warp + plank * 131.0) / period
        rings = (phase - np.floor(phase)) ** 3  # slow light-to-dark, then a sharp edge
        fade = np.clip(value_noise(rng, n, 60 * px_per_mm, 2, stretch=(3.0, 1.0)) * 0.8 + 0.5, 0, 1)
        streaks = value_noise(rng, n, 1.0 * px_per_mm, 2, stretch=(40.0, 1.0)) * 0.5 + 0.5
        broad = value_noise(rng, n, 100 * px_per_mm, 2, stretch=(3.0, 1.0)) * 0.5 + 0.5
        t = np.clip(0.4 * rings * fade + 0.3 * streaks + 0.3 * broad, 0, 1)
        img = _mix(light, dark, t)
        shade = 1 + 0.05 * np.random.default_rng(int(rng.integers(1 << 31))).standard_normal(plank.max() + 2)
        img *= shade[plank][..., None]
        seam = (np.abs(((yy / px_per_mm) % plank_mm)) < 0.7).astype(np.float32)
        img *= 1 - 0.4 * cv2.GaussianBlur(seam, (0, 0), 0.6)[..., None]
        roughness = float(rng.uniform(0.12, 0.4))
        main = tuple(light.tolist())
        name = f"wood-{name}"
    elif kind == "painted":
        size_mm = 600.0
        colours = {"white": (0.90, 0.90, 0.88), "light-grey": (0.72, 0.72, 0.72), "black": (0.08, 0.08, 0.09),
                   "cream": (0.90, 0.85, 0.72), "slate-blue": (0.30, 0.38, 0.48), "sage": (0.55, 0.62, 0.52)}
        name = str(rng.choice(list(colours)))
        base = np.array(colours[name], np.float32)
        ppm = n / size_mm
        noise = value_noise(rng, n, 25 * ppm, 4) * 0.03 + value_noise(rng, n, 2 * ppm, 1) * 0.015
        img = np.clip(base[None, None, :] * (1 + noise[..., None]), 0, 1)
        roughness = float(rng.uniform(0.08, 0.35))
        main = tuple(base.tolist())
        name = f"painted-{name}"
    elif kind == "linen":
        size_mm = 300.0
        colours = {"beige": (0.78, 0.72, 0.62), "grey": (0.55, 0.55, 0.55), "navy": (0.14, 0.18, 0.32),
                   "white": (0.88, 0.87, 0.84), "terracotta": (0.62, 0.34, 0.24)}
        name = str(rng.choice(list(colours)))
        base = np.array(colours[name], np.float32)
        f = 2 * np.pi / max(2.0, n / size_mm * 0.9)
        weave = (np.sin(xx * f) * np.sin(yy * f)) * 0.06
        ppm = n / size_mm
        slub = value_noise(rng, n, 8 * ppm, 3, stretch=(3.0, 0.5)) * 0.025 + value_noise(rng, n, 25 * ppm, 3) * 0.03
        img = np.clip(base[None, None, :] * (1 + weave + slub)[..., None], 0, 1)
        roughness = 1.0
        main = tuple(base.tolist())
        name = f"linen-{name}"
    elif kind == "gingham":
        size_mm = 400.0
        colours = {"red": (0.72, 0.10, 0.10), "blue": (0.12, 0.24, 0.62), "green": (0.12, 0.45, 0.20),
                   "black": (0.10, 0.10, 0.10)}
        name = str(rng.choice(list(colours)))
        col = np.array(colours[name], np.float32)
        white = np.array((0.92, 0.91, 0.88), np.float32)
        check_px = rng.choice([10.0, 16.0, 25.0]) * n / size_mm
        a = ((xx // check_px) % 2).astype(np.float32)
        b = ((yy // check_px) % 2).astype(np.float32)
        t = 0.5 * (a + b)  # 0 white, 0.5 tint, 1 full colour
        img = _mix(white, col, t)
        f = 2 * np.pi / max(2.0, n / size_mm * 0.8)
        img *= (1 + 0.05 * np.sin(xx * f) * np.sin(yy * f))[..., None]
        roughness = 1.0
        main = tuple(col.tolist())
        name = f"gingham-{name}"
    elif kind == "felt":
        size_mm = 400.0
        colours = {"green": (0.10, 0.36, 0.18), "blue": (0.10, 0.22, 0.45), "grey": (0.32, 0.32, 0.33),
                   "burgundy": (0.40, 0.08, 0.12)}
        name = str(rng.choice(list(colours)))
        base = np.array(colours[name], np.float32)
        ppm = n / size_mm
        noise = value_noise(rng, n, 1 * ppm, 2) * 0.08 + value_noise(rng, n, 25 * ppm, 3) * 0.05
        img = np.clip(base[None, None, :] * (1 + noise[..., None]), 0, 1)
        roughness = 1.0
        main = tuple(base.tolist())
        name = f"felt-{name}"
    elif kind == "marble":
        size_mm = 700.0
        name = str(rng.choice(["white", "grey", "black"]))
        base = {"white": (0.88, 0.87, 0.85), "grey": (0.60, 0.60, 0.60), "black": (0.12, 0.12, 0.13)}[name]
        vein = {"white": (0.55, 0.55, 0.56), "grey": (0.35, 0.35, 0.36), "black": (0.70, 0.70, 0.70)}[name]
        base, vein = np.array(base, np.float32), np.array(vein, np.float32)
        turb = value_noise(rng, n, n / 4, 6) * 9
        v = np.abs(np.sin((xx * 0.7 + yy * 0.5) / n * 2 * np.pi * rng.uniform(2, 5) + turb))
        t = np.clip((0.12 - v) / 0.12, 0, 1) ** 1.5 * 0.8
        img = _mix(base, vein, t)
        roughness = float(rng.uniform(0.05, 0.2))
        main = tuple(base.tolist())
        name = f"marble-{name}"
    else:
        raise ValueError(f"unknown table kind {kind!r}: choose one of {', '.join(TABLE_KINDS)}")
    # A little brightness jitter so two tables of the same name differ.
    img = np.clip(img * rng.uniform(0.85, 1.1), 0, 1)
    return TableTexture(kind, name, srgb_to_linear(img), size_mm, roughness, main)


def stone_texture(rng: np.random.Generator, px_per_mm: float = 8.0, size_mm: float = 64.0) -> tuple[np.ndarray, np.ndarray]:
    """Moulded stone blocks for the grey pieces: (albedo multiplier around 1, height map in [0, 1]).

    The pattern repeats every `size_mm` millimetres; courses are about 5 mm high.
    """
    n = int(round(size_mm * px_per_mm))
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32) / px_per_mm
    course = 64.0 / 12  # 12 courses per tile so the pattern tiles
    row = (yy // course).astype(int)
    brick = 64.0 / 6
    offset = (row % 2) * brick / 2
    col = ((xx + offset) // brick).astype(int)
    mortar_w = 0.45
    in_mortar = ((yy % course) < mortar_w) | (((xx + offset) % brick) < mortar_w)
    ids = (row * 131 + col * 17) % 997
    shade = 1 + 0.05 * np.random.default_rng(int(rng.integers(1 << 31))).standard_normal(1000)[ids]
    mottle = value_noise(rng, n, 16, 3) * 0.05
    albedo = np.where(in_mortar, 0.82, shade) * (1 + mottle)
    height = np.where(in_mortar, 0.0, 1.0).astype(np.float32)
    height = cv2.GaussianBlur(height, (0, 0), 0.6 * px_per_mm / 4)
    return albedo.astype(np.float32), height


def card_texture(colour_srgb: tuple[float, float, float], rng: np.random.Generator,
                 px: tuple[int, int] = (252, 352)) -> np.ndarray:
    """Face of a wall or tower card: parchment, a border in the player's colour, pieces drawn on it."""
    w, h = px
    img = np.ones((h, w, 3), np.float32) * np.array((0.93, 0.88, 0.76), np.float32)
    img *= (1 + value_noise(rng, max(w, h), 30, 3)[:h, :w] * 0.04)[..., None]
    border = int(0.06 * w)
    c = np.array(colour_srgb, np.float32)
    img[:border], img[-border:], img[:, :border], img[:, -border:] = c, c, c, c
    grey = (0.55, 0.55, 0.55)
    for _ in range(int(rng.integers(1, 4))):
        cx, cy = int(rng.uniform(0.3, 0.7) * w), int(rng.uniform(0.3, 0.75) * h)
        if rng.random() < 0.5:
            cv2.rectangle(img, (cx - 22, cy - 22), (cx + 22, cy + 22), grey, -1)
            cv2.rectangle(img, (cx - 22, cy - 22), (cx + 22, cy + 22), (0.3, 0.3, 0.3), 2)
        else:
            cv2.rectangle(img, (cx - 60, cy - 10), (cx + 60, cy + 10), grey, -1)
            cv2.rectangle(img, (cx - 60, cy - 10), (cx + 60, cy + 10), (0.3, 0.3, 0.3), 2)
    cv2.circle(img, (int(0.8 * w), int(0.1 * h) + border), 12, (0.2, 0.2, 0.2), 2)
    return srgb_to_linear(img)


def box_lid_texture(rng: np.random.Generator, px: int = 512) -> np.ndarray:
    """Lid of the game box: a dark painted landscape with a light title band."""
    sky = np.array(rng.choice([(0.16, 0.22, 0.40), (0.30, 0.12, 0.10), (0.12, 0.28, 0.18)]), np.float32)
    img = np.ones((px, px, 3), np.float32) * sky
    img *= (1 + value_noise(rng, px, 80, 4) * 0.25)[..., None]
    yy = np.arange(px)[:, None]
    hill = (0.6 + 0.08 * np.sin(np.arange(px) / px * 7 + rng.uniform(0, 6)))[None, :] * px
    img[yy[:, 0] > hill.max()] *= 0.6
    img = np.where((yy > hill)[..., None], img * 0.55 + np.array((0.20, 0.18, 0.10), np.float32) * 0.45, img)
    cv2.rectangle(img, (int(0.1 * px), int(0.08 * px)), (int(0.9 * px), int(0.22 * px)), (0.92, 0.85, 0.55), -1)
    for i in range(6):  # castle silhouette
        x0 = int(px * (0.25 + 0.09 * i))
        cv2.rectangle(img, (x0, int(0.42 * px)), (x0 + int(0.06 * px), int(0.62 * px)), (0.6, 0.6, 0.62), -1)
    return srgb_to_linear(np.clip(img, 0, 1))
