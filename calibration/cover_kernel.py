"""The appearance fit's innermost step (pieces._Grid.cover), compiled with numba.

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
def add_soft_cover(out: np.ndarray, xs: np.ndarray, ys: np.ndarray, x0: float, y0: float, step: float,
                   poly: np.ndarray, ramp: float, scale: np.ndarray, scaled: bool) -> None:
    """Add to `out` (rows at `ys`, columns at `xs`, mm: every `step` from (x0, y0)) how much of a
    pixel of width `ramp` centred on each grid point the convex polygon `poly` (n, 2) covers (0..1,
    from the signed distance to its edges), times `scale` (out's shape) where `scaled`."""
    h, w = out.shape
    n = poly.shape[0]
    xmin, ymin, xmax, ymax = poly[0, 0], poly[0, 1], poly[0, 0], poly[0, 1]
    cx, cy = 0.0, 0.0
    for i in range(n):
        px, py = poly[i, 0], poly[i, 1]
        xmin, xmax, ymin, ymax = min(xmin, px), max(xmax, px), min(ymin, py), max(ymax, py)
        cx += px
        cy += py
    cx, cy = cx / n, cy / n
    if not (math.isfinite(xmin) and math.isfinite(xmax) and math.isfinite(ymin) and math.isfinite(ymax)):
        return  # a fit's parameters gone off to infinity: nothing of it lies in the window
    c0 = max(math.floor((xmin - ramp - x0) / step), 0)
    r0 = max(math.floor((ymin - ramp - y0) / step), 0)
    c1 = min(math.ceil((xmax + ramp - x0) / step) + 1, w)
    r1 = min(math.ceil((ymax + ramp - y0) / step) + 1, h)
    if c1 <= c0 or r1 <= r0:
        return
    # The edges as outward unit normals (nx, ny) and offsets c (inside: n . p <= c).
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
    for r in range(r0, r1):
        y = ys[r]
        for col in range(c0, c1):
            x = xs[col]
            sd = nx[0] * x + ny[0] * y - c[0]
            for k in range(1, n):
                v = nx[k] * x + ny[k] * y - c[k]
                if v > sd:
                    sd = v
            v = 0.5 - sd / ramp
            v = min(max(v, 0.0), 1.0)
            if scaled:
                v = v * scale[r, col]
            out[r, col] += v
