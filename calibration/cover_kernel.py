"""Convex polygons on the mat, compiled with numba: how much of each pixel one covers (the
clear-of-the-piece test of the appearance fit's windows, pieces._soft_cover; the fit's own kernel,
appearance_kernel._add_cover, writes the same sums out for its four-sided faces, some 10 million
times a photo), and points' signed distance to one (the outline fits, pieces._model_distance,
thousands of times a photo).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def edge_planes(poly: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A convex polygon's (n, 2) edges as outward unit normals (nx, ny) and offsets c (inside: n . p <= c)."""
    n = poly.shape[0]
    cx, cy = 0.0, 0.0
    for i in range(n):
        cx += poly[i, 0]
        cy += poly[i, 1]
    cx, cy = cx / n, cy / n
    nx, ny, c = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        ax, ay = poly[i, 0], poly[i, 1]
        j = (i + 1) % n
        ex, ey = poly[j, 0] - ax, poly[j, 1] - ay
        length = max(math.sqrt(ex * ex + ey * ey), 1e-9)
        ex_n, ey_n = ey / length, -ex / length
        if ex_n * (cx - ax) + ey_n * (cy - ay) > 0:  # pointing inwards
            ex_n, ey_n = -ex_n, -ey_n
        nx[i], ny[i], c[i] = ex_n, ey_n, ex_n * ax + ey_n * ay
    return nx, ny, c


@njit(cache=True, nogil=True)
def cover_at(nx: np.ndarray, ny: np.ndarray, c: np.ndarray, x: float, y: float, ramp: float) -> float:
    """The share (0..1) of a pixel of width `ramp` centred on (x, y) inside the edges, from the signed
    distance to them (exact inside; a close bound outside)."""
    sd = nx[0] * x + ny[0] * y - c[0]
    for k in range(1, nx.shape[0]):
        v = nx[k] * x + ny[k] * y - c[k]
        if v > sd:
            sd = v
    return min(max(0.5 - sd / ramp, 0.0), 1.0)


@njit(cache=True, nogil=True)
def soft_cover(points: np.ndarray, poly: np.ndarray, ramp: float) -> np.ndarray:
    """How much of a pixel of width `ramp` centred on each of `points` (m, 2) the convex polygon
    `poly` (n, 2) covers (0..1)."""
    nx, ny, c = edge_planes(poly)
    out = np.empty(points.shape[0])
    for i in range(points.shape[0]):
        out[i] = cover_at(nx, ny, c, points[i, 0], points[i, 1], ramp)
    return out


@njit(cache=True, nogil=True)
def boundary_distance(points: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Signed distance (outside > 0) of `points` (m, 2) to the convex polygon `poly` (n, 2), given
    counter-clockwise or not. (The arithmetic of the numpy version it replaced, operation for
    operation, so distances are the same to the bit; numpy's temporaries over points times edges cost
    more than the sums.)"""
    n = poly.shape[0]
    abx, aby = np.empty(n), np.empty(n)
    for k in range(n):
        j = (k + 1) % n
        abx[k], aby[k] = poly[j, 0] - poly[k, 0], poly[j, 1] - poly[k, 1]
    area2 = 0.0  # twice the signed area: its sign is the polygon's orientation
    for k in range(n):
        j = (k + 1) % n
        area2 += abx[k] * aby[j] - aby[k] * abx[j]
    orient = 1.0 if area2 > 0 else (-1.0 if area2 < 0 else 0.0)
    out = np.empty(points.shape[0])
    for i in range(points.shape[0]):
        px, py = points[i, 0], points[i, 1]
        dist = math.inf
        inside = True
        for k in range(n):
            apx, apy = px - poly[k, 0], py - poly[k, 1]
            t = min(max((apx * abx[k] + apy * aby[k]) / max(abx[k] * abx[k] + aby[k] * aby[k], 1e-12), 0.0), 1.0)
            dx, dy = px - (poly[k, 0] + t * abx[k]), py - (poly[k, 1] + t * aby[k])
            dist = min(dist, math.sqrt(dx * dx + dy * dy))
            if not (abx[k] * apy - aby[k] * apx) * orient >= 0:
                inside = False
        out[i] = -dist if inside else dist
    return out
