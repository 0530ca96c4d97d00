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


@dataclass(frozen=True)
class Lattice:
    """Lattice point (i, j) sits at origin + pitch * (i * u + j * v) on the table plane (table units)."""

    origin: np.ndarray  # (2,)
    angle: float  # radians, direction of u; v = u rotated by +90 degrees
    pitch: float
    strength: float = 0.0  # 0..1, how periodic the mask looked (a castle is strongly periodic)

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
        return Lattice(o, self.angle + d_angle, self.pitch * pitch_factor, self.strength)


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


def _period_and_phase(profile: np.ndarray, min_period: float, max_period: float) -> tuple[float, float, float]:
    """Best period (samples) in [min_period, max_period], the phase of its peaks, and a 0..1 strength.

    Scans periods finely with a direct Fourier sum (the profile is short, so this is cheap) and takes
    the one with the largest normalised amplitude, preferring the fundamental over its harmonics.
    """
    p = profile - profile.mean()
    n = np.arange(len(p))
    energy = float(np.sqrt(np.sum(p * p) * len(p))) or 1.0
    periods = np.geomspace(min_period, max_period, 400)
    basis = np.exp(-2j * np.pi * n[None, :] / periods[:, None])
    amps = basis @ p
    strength = np.abs(amps) / energy
    # The strongest period is the pitch. (Preferring half of it when nearly as strong rescued some
    # oblique views but broke more top-down ones on the development renders; the reconstruction also
    # tries twice the pitch against the photo.)
    chosen = int(np.argmax(strength))
    period = float(periods[chosen])
    phase = float((-np.angle(amps[chosen]) / (2 * np.pi) * period) % period)
    return period, phase, float(strength[chosen])


def fit_lattice(top_mask: np.ndarray, px_per_unit: float, pitch_range: tuple[float, float],
                offset: tuple[float, float] = (0.0, 0.0)) -> Lattice | None:
    """Fit the lattice to a top-view mask whose pixel (c, r) is table point offset + (c, r) / px_per_unit.

    pitch_range is the allowed pitch in table units. Returns None when the mask shows no lattice.
    """
    if top_mask.sum() < 50:
        return None
    angle, clarity = dominant_axis_angle(top_mask)
    h, w = top_mask.shape
    centre = (w / 2.0, h / 2.0)
    rot = cv2.getRotationMatrix2D(centre, math.degrees(angle), 1.0)
    # After this warp, the lattice axes are the image axes (u along columns, v along rows).
    aligned = cv2.warpAffine(top_mask.astype(np.float32), rot, (w, h), flags=cv2.INTER_LINEAR)
    lo, hi = pitch_range[0] * px_per_unit, pitch_range[1] * px_per_unit
    col_prof = aligned.sum(axis=0)
    row_prof = aligned.sum(axis=1)
    pc, phc, sc = _period_and_phase(col_prof, lo, hi)
    pr, phr, sr = _period_and_phase(row_prof, lo, hi)
    # Both axes share one pitch; average weighted by how clearly each was seen.
    period = (pc * sc + pr * sr) / max(1e-9, sc + sr)
    # Recompute phases at the common period.
    def phase_at(prof: np.ndarray) -> float:
        n = np.arange(len(prof))
        a = np.sum((prof - prof.mean()) * np.exp(-2j * np.pi * n / period))
        return float((-np.angle(a) / (2 * np.pi) * period) % period)

    # Peaks of the projections are lattice lines (towers and walls sit on them).
    x0 = phase_at(col_prof)
    y0 = phase_at(row_prof)
    # Aligned pixel (x0, y0) -> top-view pixel by the inverse rotation -> table units.
    inv = cv2.invertAffineTransform(rot)
    o_px = inv @ np.array([x0, y0, 1.0])
    # The aligned image's x axis is the top view's direction `angle`... up to OpenCV's sign convention:
    # getRotationMatrix2D rotates counter-clockwise in image terms, so aligned x = top-view direction angle.
    u_px = inv[:, :2] @ np.array([1.0, 0.0])
    lat_angle = math.atan2(u_px[1], u_px[0])
    strength = float(min(1.0, (sc + sr) / 2.0 * 2.0)) * clarity
    return Lattice(origin=o_px / px_per_unit + np.asarray(offset, float), angle=lat_angle, pitch=period / px_per_unit, strength=strength)
