"""The per-period loop of the lattice's comb contrast (lattice.comb_contrast), compiled with numba.

Four hundred candidate periods are scored on each projection, four projections per reading; each score
samples the profile on the period's lines and at nine offsets between them. In Python that loop was about
a quarter of the lattice stage, and done as arrays for all periods at once it needs (periods x offsets x
lines) samples in memory, which for the short periods of a castle-only pose was slower still.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _sample(r: np.ndarray, x: float, beyond: float) -> float:
    """r linearly interpolated at x >= 0 (its samples at 0, 1, ...); `beyond` past the last sample."""
    last = r.shape[0] - 1
    if x >= last:
        return beyond if x > last else r[last]
    i = int(x)
    return r[i] + (r[i + 1] - r[i]) * (x - i)


@njit(cache=True, nogil=True)
def comb_contrast_kernel(p: np.ndarray, local: np.ndarray, periods: np.ndarray, phases: np.ndarray,
                         between: np.ndarray, scale: float) -> np.ndarray:
    """For each period k: the mean of r = p - local[k] on its lines (phase + m * period inside the
    profile) minus the highest mean at any fraction `between` of a period past them (0 beyond the
    profile's end), over `scale`; -inf where fewer than two lines fit."""
    n = p.shape[0]
    out = np.empty(periods.shape[0])
    r = np.empty(n)
    for k in range(periods.shape[0]):
        period, phase = periods[k], phases[k]
        count = int(np.ceil((n - phase) / period))
        if count < 2:
            out[k] = -np.inf
            continue
        for t in range(n):
            r[t] = p[t] - local[k, t]
        on = 0.0
        for m in range(count):
            on += _sample(r, phase + m * period, r[n - 1])
        best = -np.inf
        for f in between:
            s = 0.0
            for m in range(count):
                s += _sample(r, phase + m * period + f * period, 0.0)
            best = max(best, s / count)
        out[k] = (on / count - best) / scale
    return out
