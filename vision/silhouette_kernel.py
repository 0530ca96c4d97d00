"""Rasterising the candidate pieces' silhouettes (reconstruct.build_elements, union_score), compiled with numba.

A piece's silhouette is the convex hull of its box's eight projected corners. The lattice search draws
some five hundred of them for each of the thirty-odd lattices it tries per photo, and the union of the
decided ones for each of the several hundred trials of the silhouette refinement; drawn one call at a
time through OpenCV (hull, fill, then finding the filled pixels) the interpreter's overhead per piece
was a third of a reading. Here each call draws them all.

The rule is the one OpenCV's 8-connected polygon fill follows closely: a pixel (centre at integer
coordinates) is covered when its centre lies inside the hull, or within half a pixel of an edge
measured along the edge's minor axis (the pixels an 8-connected line drawn along the outline adds).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _hull(pts: np.ndarray) -> np.ndarray:
    """Convex hull of a few points (n, 2), counter-clockwise in (x right, y down) pixel coordinates
    as the monotone chain gives it; collinear points left out."""
    n = pts.shape[0]
    # By x, then y: an insertion sort, as fast as np.argsort for eight points and compiled in a
    # fraction of the time (numba's argsort and array assignments were two thirds of the kernel's 10 s
    # compile, which a first photo on a fresh install waits for).
    key = pts[:, 0] * 1e6 + pts[:, 1]
    order = np.arange(n)
    for i in range(1, n):
        j = i
        while j > 0 and key[order[j - 1]] > key[order[j]]:
            order[j - 1], order[j] = order[j], order[j - 1]
            j -= 1
    p = np.empty((n, 2))
    for i in range(n):
        p[i, 0], p[i, 1] = pts[order[i], 0], pts[order[i], 1]
    out = np.empty((2 * n, 2))
    k = 0
    for i in range(n):  # lower chain
        while k >= 2 and ((out[k - 1, 0] - out[k - 2, 0]) * (p[i, 1] - out[k - 2, 1])
                          - (out[k - 1, 1] - out[k - 2, 1]) * (p[i, 0] - out[k - 2, 0])) <= 0:
            k -= 1
        out[k, 0], out[k, 1] = p[i, 0], p[i, 1]
        k += 1
    lower = k + 1
    for i in range(n - 2, -1, -1):  # upper chain
        while k >= lower and ((out[k - 1, 0] - out[k - 2, 0]) * (p[i, 1] - out[k - 2, 1])
                              - (out[k - 1, 1] - out[k - 2, 1]) * (p[i, 0] - out[k - 2, 0])) <= 0:
            k -= 1
        out[k, 0], out[k, 1] = p[i, 0], p[i, 1]
        k += 1
    return out[:max(k - 1, 1)]


@njit(cache=True, nogil=True)
def _row_spans(pts: np.ndarray, width: int, height: int, rows: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> int:
    """The covered pixels of one silhouette, row by row: fills rows[:m], x0[:m], x1[:m] (inclusive
    spans, clipped to the image) and returns m."""
    hull = _hull(pts)
    nv = hull.shape[0]
    ymin, ymax = hull[:, 1].min(), hull[:, 1].max()
    r0 = max(int(np.ceil(ymin - 0.5)), 0)
    r1 = min(int(np.floor(ymax + 0.5)), height - 1)
    if r1 < r0:
        return 0
    # Each edge as a half-plane nx * x + ny * y <= c, widened by half a pixel along its minor axis.
    nx = np.empty(2 * nv)
    ny = np.empty(2 * nv)
    c = np.empty(2 * nv)  # nv edges, then nv corners
    cx, cy = 0.0, 0.0
    for i in range(nv):
        cx += hull[i, 0]
        cy += hull[i, 1]
    cx, cy = cx / nv, cy / nv
    ne = 0
    for i in range(nv):
        ax, ay = hull[i, 0], hull[i, 1]
        bx, by = hull[(i + 1) % nv, 0], hull[(i + 1) % nv, 1]
        ex, ey = -(by - ay), bx - ax
        size = abs(ex) + abs(ey)
        if size == 0.0:
            continue
        # Outward: away from the hull's centre. A flat hull (two points) has its centre on the line
        # and gets both sides, from its two opposite edges.
        if ex * (cx - ax) + ey * (cy - ay) > 1e-9 * size:
            ex, ey = -ex, -ey
        nx[ne], ny[ne] = ex, ey
        c[ne] = ex * ax + ey * ay + 0.5 * max(abs(ex), abs(ey))
        ne += 1
    if ne < 2:
        return 0
    # The widened edges meet beyond a sharp corner (a thin box seen from its end) much further out than
    # half a pixel: cap each corner half a pixel out along its bisector, as a line drawn to the corner
    # stops there.
    nc = ne
    for i in range(ne):
        j = (i + 1) % ne
        li = np.hypot(nx[i], ny[i])
        lj = np.hypot(nx[j], ny[j])
        ux, uy = nx[i] / li + nx[j] / lj, ny[i] / li + ny[j] / lj
        if ux == 0.0 and uy == 0.0:
            continue
        vx, vy = hull[(i + 1) % nv, 0], hull[(i + 1) % nv, 1]
        nx[nc], ny[nc] = ux, uy
        c[nc] = ux * vx + uy * vy + 0.5 * max(abs(ux), abs(uy))
        nc += 1
    ne = nc
    m = 0
    for r in range(r0, r1 + 1):
        lo, hi = 0.0, width - 1.0
        empty = False
        for e in range(ne):
            rest = c[e] - ny[e] * r
            if nx[e] > 0:
                hi = min(hi, rest / nx[e])
            elif nx[e] < 0:
                lo = max(lo, rest / nx[e])
            elif rest < 0:
                empty = True
        if empty:
            continue
        a, b = int(np.ceil(lo)), int(np.floor(hi))
        if b < a:
            continue
        rows[m], x0[m], x1[m] = r, a, b
        m += 1
    return m


@njit(cache=True, nogil=True)
def silhouette_pixels(px: np.ndarray, width: int, height: int, skip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat pixel indices (y * width + x) of each box's silhouette (px: (N, 8, 2) projected corners),
    row by row, as one array: box k's are pixels[starts[k]:starts[k + 1]]; none for boxes with skip[k]."""
    n = px.shape[0]
    starts = np.zeros(n + 1, np.int64)
    cap = 1024
    pixels = np.empty(cap, np.int64)
    rows = np.empty(height + 1, np.int64)
    x0 = np.empty(height + 1, np.int64)
    x1 = np.empty(height + 1, np.int64)
    t = 0
    for k in range(n):
        if not skip[k]:
            m = _row_spans(px[k], width, height, rows, x0, x1)
            for i in range(m):
                need = t + x1[i] - x0[i] + 1
                if need > cap:
                    while cap < need:
                        cap *= 2
                    pixels = _head(pixels, t, cap)
                base = rows[i] * width
                for x in range(x0[i], x1[i] + 1):
                    pixels[t] = base + x
                    t += 1
        starts[k + 1] = t
    return _head(pixels, t, t), starts


@njit(cache=True, nogil=True)
def _head(values: np.ndarray, n: int, size: int) -> np.ndarray:
    """A new array of `size` starting with the first `n` of `values` (element by element: an array
    assignment would compile numba's shape-error formatting)."""
    out = np.empty(size, values.dtype)
    for q in range(n):
        out[q] = values[q]
    return out


@njit(cache=True, nogil=True)
def union_weight(px: np.ndarray, weight: np.ndarray, width: int, height: int) -> float:
    """Sum of `weight` (flat, y * width + x) over the union of the boxes' silhouettes (px: (N, 8, 2))."""
    n = px.shape[0]
    if n == 0:
        return 0.0
    lo_y = max(int(np.floor(px[:, :, 1].min())), 0)
    hi_y = min(int(np.ceil(px[:, :, 1].max())) + 1, height - 1)
    lo_x = max(int(np.floor(px[:, :, 0].min())), 0)
    hi_x = min(int(np.ceil(px[:, :, 0].max())) + 1, width - 1)
    if hi_y < lo_y or hi_x < lo_x:
        return 0.0
    bw = hi_x - lo_x + 1
    seen = np.zeros((hi_y - lo_y + 1) * bw, np.bool_)
    rows = np.empty(height + 1, np.int64)
    x0 = np.empty(height + 1, np.int64)
    x1 = np.empty(height + 1, np.int64)
    total = 0.0
    for k in range(n):
        m = _row_spans(px[k], width, height, rows, x0, x1)
        for i in range(m):
            r = rows[i]
            for x in range(x0[i], x1[i] + 1):
                s = (r - lo_y) * bw + (x - lo_x)
                if not seen[s]:
                    seen[s] = True
                    total += weight[r * width + x]
    return total
