"""The inner loop of the piece decision (reconstruct.icm), compiled with numba.

The decision toggles one of about a thousand candidate pieces at a time and re-counts the pixels only
it explains; the reading does that some forty times per photo while it searches the lattice. In
Python each toggle costs several numpy calls on a few hundred pixels, so the interpreter, not the
arithmetic, took half the reading's time. The algorithm is the one reconstruct.icm documents.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _decisive(pixels: np.ndarray, s: int, e: int, cover: np.ndarray, weight: np.ndarray, present: bool) -> tuple[float, int]:
    """Sum and count of the weights of the pixels whose explanation depends on piece pixels[s:e]: those
    it alone covers if it is present, those nothing covers if it is not."""
    want = 1 if present else 0
    total, count = 0.0, 0
    for t in range(s, e):
        p = pixels[t]
        if cover[p] == want:
            total += weight[p]
            count += 1
    return total, count


@njit(cache=True, nogil=True)
def icm_kernel(pixels: np.ndarray, starts: np.ndarray, order: np.ndarray, weight: np.ndarray, prior: float,
               passes: int, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Iterated conditional modes over pieces whose silhouettes are pixels[starts[k]:starts[k + 1]]
    (flat pixel indices into `weight`). `active` (bool per piece) is the start and is updated in place.
    Returns (active, margin, score): margin is the evidence for each decision as a fraction of the
    piece's pixels (positive: decided rightly by the pixels), score the weight under the union."""
    n = starts.shape[0] - 1
    n_pix = weight.shape[0]
    cover = np.zeros(n_pix, np.int16)
    for k in range(n):
        if active[k]:
            for t in range(starts[k], starts[k + 1]):
                cover[pixels[t]] += 1
    dirty = np.ones(n_pix, np.bool_)
    for _ in range(passes):
        changed = 0
        touched = np.zeros(n_pix, np.bool_)
        for k in order:
            s, e = starts[k], starts[k + 1]
            if e == s:
                continue
            seen = False
            for t in range(s, e):
                if dirty[pixels[t]]:
                    seen = True
                    break
            if not seen:
                continue
            gain, count = _decisive(pixels, s, e, cover, weight, active[k])
            gain -= prior * count
            if (active[k] and gain < 0) or (not active[k] and gain > 0):
                step = -1 if active[k] else 1
                active[k] = not active[k]
                for t in range(s, e):
                    p = pixels[t]
                    cover[p] += step
                    touched[p] = True
                changed += 1
        if changed == 0:
            break
        dirty = touched
    margin = np.zeros(n)
    for k in range(n):
        s, e = starts[k], starts[k + 1]
        if e == s:
            continue
        total, count = _decisive(pixels, s, e, cover, weight, active[k])
        m = total / max(1.0, count, 0.3 * (e - s))
        margin[k] = m if active[k] else -m
    score = 0.0
    for p in range(n_pix):
        if cover[p] > 0:
            score += weight[p]
    return active, margin, score

