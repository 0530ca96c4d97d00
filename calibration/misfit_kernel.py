"""How far the photo is from one face's fitted colour, pixel by pixel: the appearance fit's step after
the faces' cover (pieces._appearance), compiled with numba.

Each step of a piece's appearance fit fits a colour to each of its half-dozen faces (a side's changing
linearly from its foot to its top, pieces.SIDE_SHADING) and adds each pixel's misfit. In numpy that
was some twenty small array operations per face, each costing more in overhead than in arithmetic:
a third of `calibrate pieces`. The numpy version's sums were taken in another order: fits agree with
it to rounding (3e-14 mm on a synthetic set), not bit for bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def add_face_misfit(cover: np.ndarray, use_at: np.ndarray, norm: np.ndarray, pts: np.ndarray,
                    side_plane: np.ndarray, tau2: float, total: np.ndarray, covered: np.ndarray) -> None:
    """Add one face's misfit to `total` and its cover to `covered` (both per window point).

    `cover`: the face's cover on the window's grid (flattened), `use_at`: each window point's place in
    it; `norm`: the points' colours (points, 3) and `pts` their places (mat mm). `side_plane`: empty
    for a face of one colour (a top), else (foot corner x, y, next foot corner x, y, nadir x, y, cam_z,
    piece height) of a side whose colour changes linearly with the height at which the line of sight
    meets it (0 at its foot, 1 at its top; merlons and tabs taken as lying in their side's plane). The
    side's colour is then fitted per channel by weighted least squares on that height, or as its plain
    mean where the side shows too little of its height. A point's misfit is its largest channel's
    squared difference from the face's colour there, capped at `tau2`, over tau2."""
    n = use_at.shape[0]
    at = np.empty(n, np.int64)
    wgt = np.empty(n)
    m = 0
    sw = 0.0
    for i in range(n):
        w = cover[use_at[i]]
        if w != 0.0:
            at[m] = i
            wgt[m] = w
            sw += w
            m += 1
    if sw < 1e-6:
        return
    summed = np.zeros(3)
    for j in range(m):
        for c in range(3):
            summed[c] += wgt[j] * norm[at[j], c]
    mean = summed / sw
    slope = np.zeros(3)
    up = np.zeros(m)
    sv = 0.0
    shaded = False
    if side_plane.shape[0] > 0:
        shaded = True
        b0x, b0y, b1x, b1y = side_plane[0], side_plane[1], side_plane[2], side_plane[3]
        nx, ny, cam_z, height = side_plane[4], side_plane[5], side_plane[6], side_plane[7]
        a00, a10, a01, a11 = b0x - nx, b0y - ny, b1x - b0x, b1y - b0y
        det = a00 * a11 - a01 * a10
        if abs(det) < 1e-6:
            up[:] = 0.5
        else:
            for j in range(m):
                # A point at height z over the foot b0 + s (b1 - b0) is seen at nadir + k (foot - nadir),
                # k = cam_z / (cam_z - z): solved for k, then z.
                k = (a11 * (pts[at[j], 0] - nx) - a01 * (pts[at[j], 1] - ny)) / det
                up[j] = min(max(cam_z * (1.0 - 1.0 / max(k, 1e-3)) / max(height, 1e-3), 0.0), 1.0)
        svv = 0.0
        for j in range(m):
            sv += wgt[j] * up[j]
            svv += wgt[j] * up[j] * up[j]
        det_ls = sw * svv - sv * sv
        if det_ls < 1e-3 * sw * sw:
            shaded = False  # the side shows too little of its height: its plain mean
        else:
            with_up = np.zeros(3)
            for j in range(m):
                for c in range(3):
                    with_up[c] += wgt[j] * up[j] * norm[at[j], c]
            for c in range(3):
                slope[c] = (sw * with_up[c] - sv * summed[c]) / det_ls
    for j in range(m):
        i = at[j]
        r = 0.0
        for c in range(3):
            mu = mean[c] + (up[j] - sv / sw) * slope[c] if shaded else mean[c]
            r = max(r, abs(norm[i, c] - mu))
        total[i] += wgt[j] * min(r * r, tau2) / tau2
        covered[i] += wgt[j]
