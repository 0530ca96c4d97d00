"""Stage: fit the castle's lattice (rules.md G3) on the table plane: axes, pitch and origin.

Input is the grey-piece mask warped to a top view of the table. Walls run along two orthogonal
directions, so gradient orientations modulo 90 degrees give the axes; towers and walls repeat at the
lattice pitch, so the mask's projections on each axis are periodic and their spectrum gives pitch and
phase. The result is refined later against the photo itself (reconstruct.refine_lattice).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.comb_kernel import comb_contrast_kernel


@dataclass(frozen=True)
class Lattice:
    """Lattice point (i, j) sits at origin + pitch * (i * u + j * v) on the table plane (table units)."""

    origin: np.ndarray  # (2,)
    angle: float  # radians, direction of u; v = u rotated by +90 degrees
    pitch: float
    strength: float = 0.0  # 0..1, how periodic the mask looked (a castle is strongly periodic)
    alternatives: tuple[float, ...] = ()  # other pitches the mask also looked periodic at, clearest first

    @property
    def u(self) -> np.ndarray:
        return np.array([math.cos(self.angle), math.sin(self.angle)])

    @property
    def v(self) -> np.ndarray:
        return np.array([-math.sin(self.angle), math.cos(self.angle)])

    def to_table(self, ij: np.ndarray) -> np.ndarray:
        ij = np.asarray(ij, float).reshape(-1, 2)
        return self.origin + self.pitch * (ij[:, :1] * self.u + ij[:, 1:2] * self.v)

    def to_lattice(self, xy: np.ndarray) -> np.ndarray:
        d = np.asarray(xy, float).reshape(-1, 2) - self.origin
        return np.stack([d @ self.u, d @ self.v], axis=1) / self.pitch

    def affine(self) -> np.ndarray:
        """2x3 matrix A with table = A[:, :2] @ (i, j) + A[:, 2]."""
        return np.column_stack([self.pitch * self.u, self.pitch * self.v, self.origin])

    def moved(self, d_ij: tuple[float, float] = (0.0, 0.0), pitch_factor: float = 1.0, d_angle: float = 0.0) -> "Lattice":
        """A nearby lattice: origin moved by d_ij lattice steps, pitch scaled about the origin, turned."""
        o = self.origin + self.pitch * (d_ij[0] * self.u + d_ij[1] * self.v)
        return Lattice(o, self.angle + d_angle, self.pitch * pitch_factor, self.strength, self.alternatives)


def dominant_axis_angle(mask: np.ndarray) -> tuple[float, float]:
    """Direction (radians, in [0, pi/2)) of the two orthogonal edge families, and its clarity 0..1.

    Gradient orientations are folded four times (theta * 4) so that the two orthogonal wall families
    and both edge polarities vote for the same angle.
    """
    m = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), 1.5)
    gx = cv2.Sobel(m, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(m, cv2.CV_32F, 0, 1, ksize=3)
    mag = np.hypot(gx, gy)
    theta = np.arctan2(gy, gx)
    z = np.sum(mag * np.exp(4j * theta))
    total = float(mag.sum())
    if total <= 0:
        return 0.0, 0.0
    angle = (np.angle(z) / 4.0) % (math.pi / 2)
    return float(angle), float(abs(z) / total)


_BETWEEN = np.linspace(0.3, 0.7, 9)


def comb_contrast(profile: np.ndarray, periods: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How strongly `profile` is a comb of each period (samples), the phase of its teeth, and its
    Fourier amplitude there (relative to the profile's energy).

    A castle's projection is a comb: a peak on every lattice line (towers, and the walls across the
    axis) and less between them. Each candidate period is scored by that contrast: the profile's
    mean on the candidate's lines minus its highest mean at any offset between them (0.3 to 0.7 of
    a period), relative to the profile's spread. Unlike the spectrum's peak, this is near zero at any
    multiple of the true period (some offset between its lines is a lattice line) and low at a fraction
    of it (some of its lines fall between the true ones), so neither the castle's outline nor the
    comb's harmonics can win.
    """
    p = profile - profile.mean()
    n = np.arange(len(p))
    scale = float(np.sqrt(np.mean(p * p))) or 1.0
    turn = -2 * np.pi * n[None, :] / periods[:, None]
    amps = np.cos(turn) @ p + 1j * (np.sin(turn) @ p)
    phases = (-np.angle(amps) / (2 * np.pi) * periods) % periods
    cum = np.concatenate([[0.0], np.cumsum(p)])
    edges = np.arange(len(cum), dtype=float)
    # Remove the castle's outline first: the local mean over one period (a moving box) is flat for a
    # true comb but follows the outline for a period as wide as the castle. (All periods at once.)
    half = periods[:, None] / 2
    local = (np.interp(n + 0.5 + half, edges, cum) - np.interp(n + 0.5 - half, edges, cum)) / periods[:, None]
    contrast = comb_contrast_kernel(p, local, periods, phases, _BETWEEN, scale)
    return contrast, phases, np.abs(amps) / (scale * len(p))


def _local_maxima(values: np.ndarray, count: int, min_ratio: float = 1.15) -> list[int]:
    """Indices of the `count` highest local maxima, at least min_ratio apart in index-space scale."""
    peaks = [i for i in range(len(values)) if values[i] >= values[max(0, i - 1)] and values[i] >= values[min(len(values) - 1, i + 1)]]
    peaks.sort(key=lambda i: -values[i])
    chosen: list[int] = []
    for i in peaks:
        if all(abs(i - j) > min_ratio for j in chosen):
            chosen.append(i)
        if len(chosen) == count:
            break
    return chosen


def projection_sharpness(aligned: np.ndarray) -> float:
    """How peaked the row and column projections of a mask are (scale-free: variance over mean squared)."""
    total = 0.0
    for axis in (0, 1):
        prof = aligned.sum(axis=axis)
        total += float(np.var(prof) / max(1e-9, np.mean(prof) ** 2))
    return total


def sharpest_alignment(top_mask: np.ndarray, angle: float, span_deg: float = 3.0, step_deg: float = 0.25,
                       coarse_steps: int = 4):
    """The rotation near `angle` under which the mask's row and column projections are sharpest.

    Walls seen exactly along an axis pile up into narrow peaks; a degree off smears each wall over
    several columns of a castle ten steps wide. The angles `span_deg` either side are scanned every
    `coarse_steps` steps of `step_deg`, then every step around the sharpest: the sharpness rises
    smoothly to its peak, and this finds the full scan's angle on 563 of 564 development masks
    (session 22) for half the rotations, which were most of the lattice stage's time.
    Returns (angle, rotation matrix, aligned mask, sharpness), the aligned mask having the lattice
    axes along its columns and rows.
    """
    h, w = top_mask.shape
    centre = (w / 2.0, h / 2.0)
    src = top_mask.astype(np.float32)
    n = int(round(span_deg / step_deg))
    tried: dict[int, tuple] = {}

    def best_of(steps) -> tuple:
        for i in steps:
            if i not in tried:
                a = angle + math.radians(i * step_deg)
                rot = cv2.getRotationMatrix2D(centre, math.degrees(a), 1.0)
                aligned = cv2.warpAffine(src, rot, (w, h), flags=cv2.INTER_LINEAR)
                tried[i] = (projection_sharpness(aligned), a, rot, aligned)
        # Ties go to the lowest angle, as in a single scan from -span to +span.
        return max((tried[i] for i in sorted(tried)), key=lambda t: t[0])

    best = best_of(range(-n, n + 1, coarse_steps))
    centre_step = int(round(math.degrees(best[1] - angle) / step_deg))
    best = best_of(range(max(-n, centre_step - coarse_steps + 1), min(n, centre_step + coarse_steps - 1) + 1))
    return best[1], best[2], best[3], best[0]


def fit_lattice(top_mask: np.ndarray, px_per_unit: float, pitch_range: tuple[float, float],
                offset: tuple[float, float] = (0.0, 0.0), angle_hint: float | None = None) -> Lattice | None:
    """Fit the lattice to a top-view mask whose pixel (c, r) is table point offset + (c, r) / px_per_unit.

    pitch_range is the allowed pitch in table units; angle_hint, when known (the wall direction the
    pose was measured from), is one more start of the angle search.
    Returns None when the mask shows no lattice.
    """
    if top_mask.sum() < 50:
        return None
    angle, clarity = dominant_axis_angle(top_mask)
    # Start from the hint, the edges' own direction and the diagonal of each (a pose can be measured
    # from a diagonal family of lines, and a patterned table can pull the edge direction away); the
    # alignment whose projections are sharpest wins.
    starts = [angle, angle + math.pi / 4] + ([] if angle_hint is None else [angle_hint, angle_hint + math.pi / 4])
    angle, rot, aligned, _ = max((sharpest_alignment(top_mask, a % (math.pi / 2)) for a in starts), key=lambda r: r[3])
    lo, hi = pitch_range[0] * px_per_unit, pitch_range[1] * px_per_unit
    periods = np.geomspace(lo, hi, 400)
    # Both axes share one pitch: the period where the two combs together are clearest.
    cc, phc, ac = comb_contrast(aligned.sum(axis=0), periods)
    cr, phr, ar = comb_contrast(aligned.sum(axis=1), periods)
    contrast = cc + cr
    peaks = _local_maxima(contrast, 4, min_ratio=len(periods) * math.log(1.15) / math.log(hi / lo))
    # The contrast finds the right comb but is flat near its top (wide teeth); the Fourier amplitude
    # peaks sharply at the exact period, so it places the pitch within that neighbourhood.
    near = np.nonzero(np.abs(np.log(periods / periods[peaks[0]])) < 0.06)[0]
    chosen = int(near[np.argmax((ac + ar)[near])])
    period = float(periods[chosen])
    # Peaks of the projections are lattice lines (towers and walls sit on them).
    x0, y0 = float(phc[chosen]), float(phr[chosen])
    # Aligned pixel (x0, y0) -> top-view pixel by the inverse rotation -> table units.
    inv = cv2.invertAffineTransform(rot)
    o_px = inv @ np.array([x0, y0, 1.0])
    # The aligned image's x axis is the top view's direction `angle`... up to OpenCV's sign convention:
    # getRotationMatrix2D rotates counter-clockwise in image terms, so aligned x = top-view direction angle.
    u_px = inv[:, :2] @ np.array([1.0, 0.0])
    lat_angle = math.atan2(u_px[1], u_px[0])
    strength = float(np.clip(contrast[chosen] / 4.0, 0, 1)) * clarity
    alternatives = tuple(float(periods[i] / px_per_unit) for i in peaks[1:] if contrast[i] > 0.5 * contrast[chosen])
    return Lattice(origin=o_px / px_per_unit + np.asarray(offset, float), angle=lat_angle, pitch=period / px_per_unit,
                   strength=strength, alternatives=alternatives)
