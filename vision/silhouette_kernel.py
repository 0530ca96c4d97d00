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
    order = np.argsort(pts[:, 0] * 1e6 + pts[:, 1])
    p = pts[order]
    out = np.empty((2 * n, 2))
    k = 0
    for i in range(n):  # lower chain
        while k >= 2 and ((out[k - 1, 0] - out[k - 2, 0]) * (p[i, 1] - out[k - 2, 1])
                          - (out[k - 1, 1] - out[k - 2, 1]) * (p[i, 0] - out[k - 2, 0])) <= 0:
            k -= 1
        out[k] = p[i]
        k += 1
    lower = k + 1
    for i in range(n - 2, -1, -1):  # upper chain
        while k >= lower and ((out[k - 1, 0] - out[k - 2, 0]) * (p[i, 1] - out[k - 2, 1])
                              - (out[k - 1, 1] - out[k - 2, 1]) * (p[i, 0] - out[k - 2, 0])) <= 0:
            k -= 1
        out[k] = p[i]
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
    cx, cy = hull[:, 0].mean(), hull[:, 1].mean()
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
                    grown = np.empty(cap, np.int64)
                    grown[:t] = pixels[:t]
                    pixels = grown
                base = rows[i] * width
                for x in range(x0[i], x1[i] + 1):
                    pixels[t] = base + x
                    t += 1
        starts[k + 1] = t
    return pixels[:t].copy(), starts


def row_sums(weight: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Running sums of `weight` (flat, y * width + x) along each row, (height, width + 1) float64 with a
    leading 0: a row's pixels x0..x1 weigh row_sums[y, x1 + 1] - row_sums[y, x0] (for union_weight)."""
    h, w = shape
    out = np.zeros((h, w + 1))
    np.cumsum(np.asarray(weight, np.float64).reshape(h, w), axis=1, out=out[:, 1:])
    return out


@njit(cache=True, nogil=True)
def union_weight(px: np.ndarray, sums: np.ndarray, width: int, height: int) -> float:
    """Sum of the weights over the union of the boxes' silhouettes (px: (N, 8, 2)), from their `sums`
    (row_sums). Each silhouette is a span per row; the spans of a row are merged where they overlap, so
    a pixel counts once, and each merged span weighs one difference of running sums. (The refinement
    asks this some hundreds of times per photo; most of each call is drawing the boxes' rows.)"""
    n = px.shape[0]
    rows = np.empty(height + 1, np.int64)
    x0 = np.empty(height + 1, np.int64)
    x1 = np.empty(height + 1, np.int64)
    cap = max(64, n * 32)
    span_row = np.empty(cap, np.int64)
    span_x0 = np.empty(cap, np.int64)
    span_x1 = np.empty(cap, np.int64)
    t = 0
    for k in range(n):
        m = _row_spans(px[k], width, height, rows, x0, x1)
        if t + m > cap:
            while cap < t + m:
                cap *= 2
            span_row = np.concatenate((span_row[:t], np.empty(cap - t, np.int64)))
            span_x0 = np.concatenate((span_x0[:t], np.empty(cap - t, np.int64)))
            span_x1 = np.concatenate((span_x1[:t], np.empty(cap - t, np.int64)))
        span_row[t:t + m] = rows[:m]
        span_x0[t:t + m] = x0[:m]
        span_x1[t:t + m] = x1[:m]
        t += m
    order = np.argsort(span_row[:t] * (width + 1) + span_x0[:t])
    total = 0.0
    row, a, b = -1, 0, -1
    for s in order:
        if span_row[s] == row and span_x0[s] <= b + 1:
            b = max(b, span_x1[s])
            continue
        if row >= 0:
            total += sums[row, b + 1] - sums[row, a]
        row, a, b = span_row[s], span_x0[s], span_x1[s]
    if row >= 0:
        total += sums[row, b + 1] - sums[row, a]
    return total
