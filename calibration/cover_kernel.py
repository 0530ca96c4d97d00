"""How much of each pixel a convex polygon on the mat covers: the appearance fit's innermost step
(appearance_kernel) and the clear-of-the-piece test of its windows (pieces._soft_cover), compiled with
numba (the appearance fit takes it some 10 million times a photo).
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
