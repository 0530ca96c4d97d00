"""How much of each pixel a convex polygon on the mat covers: the appearance fit's innermost step
(pieces._Grid.cover) and the clear-of-the-piece test of its windows (pieces._soft_cover), compiled with numba.

Each step of a piece's appearance fit lays some thirty convex faces (body, merlons, tabs, slots) over
the window of the photo around it, and the fit takes a few hundred steps per search: in numpy, with
each face a small array, the per-call overhead cost more than the arithmetic, and this loop was some
40 % of `calibrate pieces`. The arithmetic is the numpy version's, operation for operation, so the
fits come out the same to the last bit.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _edge_planes(poly: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
def _cover_at(nx: np.ndarray, ny: np.ndarray, c: np.ndarray, x: float, y: float, ramp: float) -> float:
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
    nx, ny, c = _edge_planes(poly)
    out = np.empty(points.shape[0])
    for i in range(points.shape[0]):
        out[i] = _cover_at(nx, ny, c, points[i, 0], points[i, 1], ramp)
    return out


@njit(cache=True, nogil=True)
def add_soft_cover(out: np.ndarray, xs: np.ndarray, ys: np.ndarray, x0: float, y0: float, step: float,
                   poly: np.ndarray, ramp: float, scale: np.ndarray) -> None:
    """Add to `out` (rows at `ys`, columns at `xs`, mm: every `step` from (x0, y0)) soft_cover at
    each grid point, times `scale` (out's shape; empty: times 1), on the part of the grid around the
    polygon only."""
    h, w = out.shape
    xmin, xmax = poly[:, 0].min(), poly[:, 0].max()
    ymin, ymax = poly[:, 1].min(), poly[:, 1].max()
    if not (math.isfinite(xmin) and math.isfinite(xmax) and math.isfinite(ymin) and math.isfinite(ymax)):
        return  # a fit's parameters gone off to infinity: nothing of it lies in the window
    c0 = max(math.floor((xmin - ramp - x0) / step), 0)
    r0 = max(math.floor((ymin - ramp - y0) / step), 0)
    c1 = min(math.ceil((xmax + ramp - x0) / step) + 1, w)
    r1 = min(math.ceil((ymax + ramp - y0) / step) + 1, h)
    if c1 <= c0 or r1 <= r0:
        return
    nx, ny, c = _edge_planes(poly)
    scaled = scale.size > 0
    for r in range(r0, r1):
        for col in range(c0, c1):
            v = _cover_at(nx, ny, c, xs[col], ys[r], ramp)
            out[r, col] += v * scale[r, col] if scaled else v


@njit(cache=True, nogil=True)
def add_soft_covers(out: np.ndarray, into: np.ndarray, polys: np.ndarray, xs: np.ndarray, ys: np.ndarray,
                    x0: float, y0: float, step: float, ramp: float) -> None:
    """add_soft_cover of each of `polys` (n, corners, 2) to its map `out[into[i]]` (out: maps, rows,
    columns): a wall's merlons are some twenty faces at every step of its fit, one call for them all."""
    no_scale = np.zeros((0, 0))
    for i in range(polys.shape[0]):
        add_soft_cover(out[into[i]], xs, ys, x0, y0, step, polys[i], ramp, no_scale)
