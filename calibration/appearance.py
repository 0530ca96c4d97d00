"""Each piece fitted to the photo itself, not only to its outline (calibration.pieces, _refine_by_appearance):
every visible face of the projected box has a colour of its own (a wall's merlon tops apart from the
crenels in their shade), the print outside looks as printed, and the fit searches the box that explains
the pixels best; where a shadow made the outline unusable, the box is fitted to the pixels surely piece
and surely not (_fit_evidence)."""
from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import cv2
import numpy as np
from scipy import ndimage, optimize
from shapely.geometry import Polygon
from skimage import measure

from calibration.appearance_kernel import BODY, add_box_faces, appearance_misfit
from calibration.cover_kernel import soft_cover
from calibration.outlines import (DIFF_THRESHOLD, NOMINAL_MM, PieceFit, RECT_PX_PER_MM, WALL_MERLON, _bounds,
                                  _box_corners, _expand, _hull_points, _model_distance, _oriented_fit, _start_boxes,
                                  _to_fit)


@dataclass
class _Scene:
    """What the appearance fit needs: the rectified photo scaled so the print's black is 0 and its
    white 1 (per channel), the print as it should look (0..1), the pieces' regions, the camera."""
    norm: np.ndarray
    t01: np.ndarray
    labels: np.ndarray
    valid: np.ndarray
    nadir: np.ndarray
    cam_z: float
    piece_labels: tuple[int, ...] = ()  # the regions taken for pieces
    # The print's white in deep shadow: shadow-like (darker than the print, its colour unchanged)
    # and darker than half the paper's white (_shadow_shift).
    deep_shadow: np.ndarray | None = None
    # The focal length's relative standard error (the mat's, _camera_without_profile; 0 when it comes
    # from a camera profile or EXIF, whose own error the photo does not show).
    focal_error: float = 0.0


def _soft_cover(points: np.ndarray, poly: np.ndarray, ramp_mm: float) -> np.ndarray:
    """How much of a pixel of width `ramp_mm` centred on each point the convex polygon covers
    (0..1), from the signed distance to its edges (exact inside; a close bound outside)."""
    return soft_cover(np.ascontiguousarray(points, np.float64), np.ascontiguousarray(poly, np.float64), ramp_mm)


# A face's orientation: its top, or (0..3) the side along +x, -y, -x, +y of the piece.
TOP = -1


def _box_faces(base: np.ndarray, top: np.ndarray, nadir: np.ndarray, axes: np.ndarray):
    """A box's faces the camera sees, as (orientation, convex polygon on the mat): its top (TOP) and
    the sides facing the camera's foot point, named by the closest of `axes` (outward normals)."""
    polys, layer, code = np.empty((3, 4, 2)), np.empty(3, np.int64), np.empty(3, np.int64)
    n = add_box_faces(np.ascontiguousarray(base, np.float64), np.ascontiguousarray(top, np.float64),
                      np.asarray(nadir, np.float64), axes, np.zeros(0, np.bool_), TOP, 0, BODY, polys, layer, code, 0)
    return [(int(code[i]), polys[i]) for i in range(n)]


def _corner_merlons(side: float) -> list[tuple[float, float, float, float]]:
    """Four merlons `side` (a share of the piece's side) square, one on each corner of its top."""
    ends = ((-0.5, -0.5 + side), (0.5 - side, 0.5))
    return [(u0, u1, v0, v1) for u0, u1 in ends for v0, v1 in ends]


def _side_merlons(width: float, depth: float) -> list[tuple[float, float, float, float]]:
    """Four merlons `width` wide and `depth` deep (shares of the piece's side), one in the middle of each side."""
    middle = (-width / 2, width / 2)
    return [(-0.5, -0.5 + depth, *middle), (0.5 - depth, 0.5, *middle),
            (*middle, -0.5, -0.5 + depth), (*middle, 0.5 - depth, 0.5)]


# The merlons on a tower's and a keep's top: (height as a share of the piece's, boxes (u0, u1, v0, v1)
# as shares of its side, from its centre), as estimated for the renders (synth.geometry). A keep has
# four corner merlons 0.3 of its side, 0.2 of its height. A tower's parapet is 0.15 of its height:
# corner merlons 0.24 of its side, and one in the middle of each side, 0.22 wide and 0.2 deep; inside
# it the roof is open, so a plain box fitted to a tower settled between the roof and the merlons'
# top, 0.6-11.5 mm short (session 23: 11 dev renders measured in any light, 8 in even light).
CROWN = {"keep": (0.2, _corner_merlons(0.3)), "tower": (0.15, _corner_merlons(0.24) + _side_merlons(0.22, 0.2))}

# The slot down the middle of each of a tower's sides (pieces-and-photos.md; the walls' tabs slide into it):
# its width and depth as shares of the tower's side and its top as a share of the tower's height, as
# estimated for the renders (synth.geometry: a wall's tab, 0.22 wide and 0.73 high, fits inside). Seen from
# above, its inside shows in the side's opening: its back, one of its walls (both in the slot's shade,
# one colour of their own: TOWER_SLOT_INSIDE) and the mat at its foot. Taken for the side, the slot's dark inside
# pulled the fit's edges in: towers came out up to 3 mm shorter than on the same renders without slots,
# and modelled so, the tower heights' mean error on the development renders fell from 2.6 to 1.8 mm
# (even light) and from 1.35 to 1.0 mm (any light; session 24); on held-out renders the gain was small
# (1.06 to 1.03 mm, 2.65 to 2.39 mm).
TOWER_SLOT = (0.26, 0.12, 0.77)


def wall_merlon_starts(length: float, width: float) -> np.ndarray:
    """Where each merlon of a wall `length` long and `width` thick begins, in mm along it from its
    centre: spaced as moulded (WALL_MERLON), one flush with each end, the rest evenly between."""
    merlon_w, gap = WALL_MERLON[0] * width, WALL_MERLON[1] * width
    n = max(2, int(round((length + gap) / (merlon_w + gap))))
    gap = (length - n * merlon_w) / (n - 1)
    return -length / 2 + np.arange(n) * (merlon_w + gap)


_CROWN_SHARES = {kind: np.array(boxes, np.float64) for kind, (_, boxes) in CROWN.items()}  # (n, 4) each


def _crown(kind: str | None, params: np.ndarray) -> tuple[float, np.ndarray] | None:
    """A piece's merlons as (share of its height where they start, boxes (n, 4): u0, u1, v0, v1 in mm
    along and across it from its centre), or None for a piece fitted as a plain box. (Arrays, not
    lists: the appearance fit asks for them at every step.)"""
    length, width = params[3], params[4]
    if kind in ("short_wall", "long_wall") and len(params) == 9:
        starts = wall_merlon_starts(length, width)
        boxes = np.empty((len(starts), 4))
        boxes[:, 0], boxes[:, 1] = starts, starts + WALL_MERLON[0] * width
        boxes[:, 2], boxes[:, 3] = -width / 2, width / 2
        return WALL_MERLON[2], boxes
    if kind in CROWN:
        return CROWN[kind][0], _CROWN_SHARES[kind] * np.array([length, length, width, width])
    return None


# Appearance fit: pixels are sampled every APPEARANCE_STEP rectified pixels; a pixel's misfit
# counts in full up to APPEARANCE_TAU (in print black-to-white units) and no more, so merlons,
# slots and texture inside a face do not drag the fit.
APPEARANCE_STEP = 2
APPEARANCE_TAU = 0.15
# Faces are named by their orientation (appearance_kernel.piece_faces: TOP, or 0..3 the sides), faces
# turned the same way being lit alike. But a wall's merlon tops are not lit like its top between them: the crenels lie
# in the merlons' shade, darker in a physically lit photo. Fitted with one colour for both, walls
# came out up to 9 mm too high and 2 mm short on Mitsuba renders (development renders 3300 and
# 3304; with a colour of their own, lengths and heights within 0.6 and 0.3 mm). So too a tower's
# merlon tops, apart from its roof (CROWN_INSIDE), and a keep's.
MERLON_TOPS = TOP - 1
# A tower's slots are narrow and deep: their insides lie in their own shade, darker in a physically
# lit photo than the sides they were lit as. Lit as the sides, they pulled each side's colour down,
# and a lower top fitted the sides better: on development render even_3632 (59 degrees) the fit's
# cost was lowest 0.8 mm below the tower's true height, and 0.25 mm below with the slots' insides
# given a colour of their own. Measured with the render's camera, the towers of development renders
# even_3630-3632 went -0.64 -> -0.04, -2.79 -> -1.76 and -0.83 -> -0.30 mm in height (footprints within
# 0.08 mm as before) and nothing else changed (session 48, README: calibration).
TOWER_SLOT_INSIDE = TOP - 2
# A tower's parapet: its roof lies in the merlons' shade, darker than their tops, and their faces inside
# the parapet (towards the roof, or a crenel) in the shade of the others. Lit as the tops and as the
# sides turned the same way, they made each of those colours a compromise that a wrong height fitted
# better: on development render calib_v2_any_3705 (78 degrees, a low sun) a tower was fitted 5.2 mm too
# tall, its top's outline where the photo shows it but its merlons shifted onto the light and dark of
# the roof. With the merlons' tops (MERLON_TOPS, as a wall's) and their inner faces (CROWN_INSIDE) given
# colours of their own, it is measured 0.3 mm low; refitted so from where they had settled, the towers
# of 56 development renders (3661-3709, a camera profile) came within 0.76 mm of their heights on
# average (0.92 before), 1 over 2 mm off (6 before), but 0.44 mm low on average (0.09 before).
# Session 43 gave the tops alone a colour of their own: better on development renders, worse on
# held-out ones (any_3583 +1.8 -> +9.0 mm). This time, on held-out seeds any 3710-3714 and even
# 3700-3704 read by both codes, heights' mean error 0.53 -> 0.48 and 0.81 -> 0.80 mm (session 58).
# A keep's four corner merlons shade the top between them as well, and a wall's merlons the crenels'
# sides facing each other. Lit as one with the merlons' tops, a keep's top pulled keeps' heights up (a
# median +0.2 mm, three of 37 on 52 development renders 2.2-2.4 mm too tall) and their footprints in
# (all 43 small, a median 0.36 mm). So keeps too have their merlons' tops coloured apart from the top
# between them (keep heights' median error -0.1 mm, none over 2 mm), and keeps and walls their merlons'
# inner faces (CROWN_INSIDE; a wall's were lit as its end faces): on the same renders (a camera profile)
# 45 photos measured (43 before), 152 heights written (141), 123 within 1 mm (111), every footprint
# within 0.88 mm (a tower 1.13 mm off before) (session 60).
CROWN_INSIDE = TOP - 3
# These codes as appearance_kernel.piece_faces takes them (CODE_TOP, CODE_MERLON_TOPS, CODE_SLOT_INSIDE,
# CODE_CROWN_INSIDE).
_FACE_CODES = np.array([TOP, MERLON_TOPS, TOWER_SLOT_INSIDE, CROWN_INSIDE], np.int64)


# A side is not lit evenly: towards its foot the piece and the table hide more of the sky, so it
# darkens (on development render even_3504 a tower's and a wall's sides were a third darker in their
# lowest fifth than in their highest). Fitted with one colour, that dark foot passed for black print
# beside it, the foot moved back from the camera under a top that stayed put, and the piece came out
# short (every piece of that photo 1.5-1.8 mm). So a side's colour changes linearly from its foot to
# its top (fitted, per channel). Measured in session 44 (README: calibration).
# The darkening is steepest in a side's lowest millimetres, which a line does not follow, and the grey
# pieces still come out a median 0.5-0.6 mm low. A colour also bending with the height (quadratic), or
# dropping within 1.5 mm of the foot (exponential), was tried in session 62 on development renders: the
# first moved the medians 0.1 mm and the keeps further off; the second took the towers' median error
# from -0.8 to +0.1 mm but the walls' only to -0.55, wrote fewer heights (the foot then pins them less)
# and lost a photo (even_3668), and on keeps too made them a median 1.1 mm too tall. Not taken
# (docs/calibration-history.md, session 62).
SIDE_SHADING = True


def _bounds_around(box: np.ndarray, scene: _Scene, pad_mm: float) -> tuple[int, int, int, int]:
    """Pixel bounds (x0, y0, x1, y1) of the rectified photo within `pad_mm` of a box's outline."""
    corners = _box_corners(box, scene.nadir, scene.cam_z)
    h, w = scene.labels.shape
    x0, y0 = np.floor((corners.min(axis=0) - pad_mm) * RECT_PX_PER_MM).astype(int)
    x1, y1 = np.ceil((corners.max(axis=0) + pad_mm) * RECT_PX_PER_MM).astype(int)
    return max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)


def _other_pieces(labels: np.ndarray, scene: _Scene, label: int) -> np.ndarray:
    """Where the pieces other than region `label` lie in `labels` (a crop of scene.labels), and 3 mm
    around them (their shadows and blur)."""
    other = np.isin(labels, [i for i in scene.piece_labels if i != label])
    return cv2.dilate(other.astype(np.uint8), np.ones((int(3 * RECT_PX_PER_MM),) * 2, np.uint8)) > 0


def _other_pieces_in(scene: _Scene, label: int, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    """_other_pieces over the window [y0:y1, x0:x1] of the rectified photo (within it), counting the
    pieces just outside the window too: their surroundings reach into it."""
    h, w = scene.labels.shape
    m = int(3 * RECT_PX_PER_MM)
    ma, na = max(y0 - m, 0), max(x0 - m, 0)
    others = _other_pieces(scene.labels[ma:min(y1 + m, h), na:min(x1 + m, w)], scene, label)
    return others[y0 - ma:y1 - ma, x0 - na:x1 - na]


def _beyond_sheet(points_px: np.ndarray, shape: tuple[int, int]) -> bool:
    """Whether points (rectified pixels, x y) span more than the rectified sheet (`shape`) or lie wholly
    off it: a fit gone off the photo (the set's checks refuse it), which no window should be cut for."""
    (x0, y0), (x1, y1) = points_px.min(axis=0), points_px.max(axis=0)
    h, w = shape
    return bool((x1 - x0) * (y1 - y0) > h * w or x1 < 0 or y1 < 0 or x0 >= w or y0 >= h)


def _window(f: PieceFit, scene: _Scene, full: np.ndarray, pad_mm: float):
    """The photo around a piece (box parameters `full`), sampled every APPEARANCE_STEP pixels:
    points (mat mm), colours scaled by the print's local black and white, the print as it should
    look there and its 3 x 3 range (the print may sit a pixel off the template); other pieces and
    their surroundings are left out. None if too little of the print is in view."""
    ppm = RECT_PX_PER_MM
    x0, y0, x1, y1 = _bounds_around(full, scene, pad_mm)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    sl = (slice(y0, y1, APPEARANCE_STEP), slice(x0, x1, APPEARANCE_STEP))
    lab = scene.labels[y0:y1, x0:x1]
    # Only the other pieces are left out: bits of this piece that showed apart from it (a merlon
    # on white paper) are evidence for it.
    use = (scene.valid[y0:y1, x0:x1] & ~_other_pieces(lab, scene, f.label))[::APPEARANCE_STEP, ::APPEARANCE_STEP]
    ys, xs = np.mgrid[y0:y1:APPEARANCE_STEP, x0:x1:APPEARANCE_STEP]
    pts = (np.column_stack([xs[use], ys[use]]) + 0.5) / ppm
    norm = scene.norm[sl][use]
    t = scene.t01[sl][use]
    if len(pts) < 50:
        return None
    # Local print levels: what the print looks like here, from the pixels well clear of the
    # piece (its outline fitted so far, 2 mm out).
    clear = _soft_cover(pts, _hull_points(full[:6], scene.nadir, scene.cam_z), 1.0) == 0
    clear &= _model_distance(pts, full, scene.nadir, scene.cam_z) > 2.0
    lo_b, hi_w = t < 0.1, t > 0.9
    if (clear & lo_b).sum() < 20 or (clear & hi_w).sum() < 20:
        return None
    b_loc = np.median(norm[clear & lo_b], axis=0)
    w_loc = np.median(norm[clear & hi_w], axis=0)
    norm = (norm - b_loc) / np.maximum(w_loc - b_loc, 0.2)
    k3 = np.ones((3, 3), np.uint8)
    t_lo = cv2.erode(scene.t01[y0:y1, x0:x1], k3)[::APPEARANCE_STEP, ::APPEARANCE_STEP][use]
    t_hi = cv2.dilate(scene.t01[y0:y1, x0:x1], k3)[::APPEARANCE_STEP, ::APPEARANCE_STEP][use]
    return pts, norm, t, t_lo, t_hi, _Grid(use, (x0 + 0.5) / ppm, (y0 + 0.5) / ppm, APPEARANCE_STEP / ppm)


@dataclass
class _Grid:
    """Where a window's points lie: every `step` mm from (x0, y0) mm, those in `use` (2-D)."""
    use: np.ndarray
    x0: float
    y0: float
    step: float
    xs: np.ndarray = field(init=False)  # the columns' and rows' coordinates (mm)
    ys: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        h, w = self.use.shape
        self.xs = self.x0 + self.step * np.arange(w)
        self.ys = self.y0 + self.step * np.arange(h)


# How far around a piece its shadow is looked for (_deep_shadow, _shadow_shift).
SHADOW_PAD_MM = 12.0


def _deep_shadow(f: PieceFit, scene: _Scene) -> float:
    """Share of the white paper within SHADOW_PAD_MM of a fitted piece (beyond 1 mm, where even soft
    light leaves a contact shadow) darker than half the paper's white: a hard light's shadow."""
    params = f.box
    win = _window(f, scene, params, pad_mm=SHADOW_PAD_MM)
    if win is None:
        return 0.0
    pts, norm, t = win[:3]
    return _deep_share(_model_distance(pts, params, scene.nadir, scene.cam_z), norm, t)


def _deep_share(dist: np.ndarray, norm: np.ndarray, t: np.ndarray) -> float:
    near_white = (dist > 1.0) & _white_print(t)
    return float(np.mean(_deeply_dark(norm[near_white]))) if near_white.any() else 0.0


def _white_print(t: np.ndarray) -> np.ndarray:
    """Where the print (0..1, as it should look) is white paper."""
    return t > 0.9


def _deeply_dark(norm: np.ndarray) -> np.ndarray:
    """Colours (scaled by the print's local black and white, last axis) darker than half the paper's white."""
    return norm.mean(axis=-1) < 0.5


@dataclass
class _Appearance:
    """One grey piece's appearance fit: the photo around it and the cost of a box there."""
    cost: Callable[[np.ndarray], float]  # of fit parameters (_to_fit): misfit plus a weak height prior
    square: bool
    tabs: bool
    pts: np.ndarray
    norm: np.ndarray
    t: np.ndarray


def _appearance(f: PieceFit, scene: _Scene, pad_mm: float = 8.0) -> _Appearance | None:
    """The appearance model of a grey piece in a window `pad_mm` around its box so far.

    Model: inside the projected piece each visible face has one colour of its own (fitted; a side's
    changes linearly from its foot to its top, SIDE_SHADING), and outside it the print looks as
    printed. A face that differs from the print beneath it by only
    a little (dark grey on black ink, light grey on white paper) still says where it is when
    summed over its whole area, which thresholding pixel by pixel cannot. The print's levels are
    corrected in the piece's own neighbourhood first (glare on the ink, uneven light).
    """
    tabs = f.kind in ("short_wall", "long_wall")
    win = _window(f, scene, _expand(_to_fit(f.box, False), False, tabs), pad_mm=pad_mm)
    if win is None:
        return None
    pts, norm, t, t_lo, t_hi, grid = win
    r_bg = np.max(np.maximum(np.maximum(t_lo[:, None] - norm, norm - t_hi[:, None]), 0), axis=1)
    tau2 = APPEARANCE_TAU ** 2
    rho_bg = np.minimum(r_bg ** 2, tau2) / tau2
    ramp = APPEARANCE_STEP / RECT_PX_PER_MM
    ln0, _, hn = NOMINAL_MM[f.kind]
    square = f.kind in ("tower", "keep")  # one side for both
    kind = f.kind
    hi_ = 4 if square else 5
    point_at = np.full(grid.use.shape, -1, np.int64)  # each grid point's index among the window's points
    point_at[grid.use] = np.arange(len(pts))  # (pts: the points grid.use picks, row by row)

    slot = np.array(TOWER_SLOT) if kind == "tower" else np.zeros(0)

    no_crown = (0.0, np.zeros((0, 4)))
    cam_z = float(scene.cam_z)

    def misfit(q):
        p = _expand(q, square, tabs)
        share, boxes = _crown(kind, p) or no_crown
        return appearance_misfit(p, scene.nadir, cam_z, share, boxes, slot, _FACE_CODES, SIDE_SHADING, grid.xs,
                                 grid.ys, grid.x0, grid.y0, grid.step, ramp, point_at, norm, pts, rho_bg, tau2)

    def cost(q):
        scale = q[3] / ln0
        # A weak pull of the height towards the spec's proportions (worth a few pixels): it
        # settles the trade-off between a piece's size and its height that a view leaves open.
        prior = 4.0 * ((q[hi_] - hn * scale) / (0.2 * hn * scale)) ** 2
        return float(misfit(q) + prior)

    return _Appearance(cost, square, tabs, pts, norm, t)


def _appearance_search(model: _Appearance, starts: list[np.ndarray]):
    """Nelder-Mead from each start (fit parameters), then again from the best: the lowest cost."""
    return _lowest_cost_search(model.cost, starts, _simplex_steps(model.square))


def _lowest_cost_search(cost: Callable[[np.ndarray], float], starts: list[np.ndarray], steps: np.ndarray):
    """_simplex_search from each start, then again from the two best: the lowest cost."""
    results = []
    for i, start in enumerate(starts):
        if any(np.array_equal(start, earlier) for earlier in starts[:i]):
            continue  # (a square piece's start with the spec's height is its proportional start)
        results.append(_simplex_search(cost, start, steps))
    # A simplex search can shrink before it gets to the bottom of a long valley (a long wall's
    # length against its height): search again from where it stopped. Not from the best alone: the
    # runner-up may lie in such a valley (held-out render calib_v2_any_3843 without a camera profile:
    # a long wall's first fit stopped at 72.4 mm long for 80.9, cost 6040, and from the spec's
    # proportions at 6080, whence a second search went on to 81.8 mm at 5855).
    results.sort(key=lambda r: r.fun)
    again = [_simplex_search(cost, r.x, steps) for r in results[:2]]
    return min(results + again, key=lambda r: r.fun)


def _simplex_steps(square: bool) -> np.ndarray:
    """The appearance fit's first simplex steps, per fit parameter (_to_fit)."""
    return np.array([1.0, 1.0, 0.03, 1.0, 3.0] if square else [1.0, 1.0, 0.03, 1.0, 0.5, 3.0])


def _simplex_search(cost: Callable[[np.ndarray], float], start: np.ndarray, steps: np.ndarray):
    """Nelder-Mead on `cost` from `start`, first steps `steps`; the parameters after the first three
    (sizes) stay at 1 mm or more (a wall's thickness could otherwise pass through zero where its
    dark side looks like the black print)."""
    n = len(start)
    start = np.maximum(start, [-np.inf] * 3 + [1.0] * (n - 3))
    bounds = [(None, None)] * 3 + [(1.0, None)] * (n - 3)
    simplex = np.vstack([start] + [start + np.eye(n)[i] * steps[i] for i in range(n)])
    return optimize.minimize(cost, start, method="Nelder-Mead", bounds=bounds,
                             options={"initial_simplex": simplex, "xatol": 0.02, "fatol": 0.05, "maxfev": 900})


def _proportional_start(q: np.ndarray, kind: str, length: float | None = None) -> np.ndarray:
    """Fit parameters `q` with the length set to `length` (default: q's) and the thickness and
    height the spec's proportions give for it: a start that does not inherit a collapsed side."""
    ln0, wn, hn = NOMINAL_MM[kind]
    out = np.asarray(q, float).copy()
    out[3] = q[3] if length is None else length
    if kind in ("tower", "keep"):  # square: length, height
        out[4] = hn * out[3] / ln0
    else:
        out[4], out[5] = wn * out[3] / ln0, hn * out[3] / ln0
    return out


def _top_start(now: np.ndarray, top_mm: np.ndarray, scene: _Scene, length: float) -> np.ndarray:
    """Fit parameters of tower fit `now` made `length` wide (the spec's proportions) with its top, not
    its footprint, centred on `top_mm` (the outline found's centre). Where a tower's sides look like
    the print beneath them (dark sides on black ink, light grey on white paper) little more than its
    top stands out, and a box fitted to that outline shrinks onto it, short, and displaced towards the
    camera's nadir by the top's parallax (15 x 15 x 7 mm, 22 mm from a 25 x 25 x 47 mm tower, on
    calib_v2_even_3207)."""
    start = _proportional_start(now, "tower", length)
    k = scene.cam_z / max(scene.cam_z - start[4], 1e-3)
    start[:2] = scene.nadir + (top_mm - scene.nadir) / k
    return start


def _grid_starts(model: _Appearance, a: np.ndarray, b: np.ndarray, keep: int = 2,
                 reach: float = 0.5) -> list[np.ndarray]:
    """The `keep` cheapest boxes of square start `a`'s size centred on a grid (a quarter of its side
    apart) over `a`'s and `b`'s centres and `reach` of a side around them, each turned every 15 degrees:
    starts for a piece whose outline said little of where it stands or how it is turned (a search
    started 40 degrees off the true turn settled at 18 mm for a 23 mm tower)."""
    lo = np.minimum(a[:2], b[:2]) - reach * a[3]
    hi = np.maximum(a[:2], b[:2]) + reach * a[3]
    step = a[3] / 4
    boxes = []
    for x in np.arange(lo[0], hi[0] + 1e-9, step):
        for y in np.arange(lo[1], hi[1] + 1e-9, step):
            for turn in np.radians(np.arange(0.0, 90.0, 15.0)):
                q = a.copy()
                q[:3] = x, y, a[2] + turn
                boxes.append(q)
    return _cheapest(model, boxes, keep)


def _cheapest(model: _Appearance, boxes: list[np.ndarray], keep: int) -> list[np.ndarray]:
    """The `keep` boxes (fit parameters) the photo costs least, the first of equals first."""
    return sorted(boxes, key=model.cost)[:keep]


def _apply_appearance(f: PieceFit, model: _Appearance, x: np.ndarray) -> None:
    f.box = _expand(x, model.square)


def _refine_by_appearance(f: PieceFit, scene: _Scene) -> None:
    """Refit a grey piece to the photo itself, not to a thresholded outline (_appearance)."""
    model = _appearance(f, scene)
    if model is None:
        return
    square, tabs = model.square, model.tabs
    ln0, _, hn = NOMINAL_MM[f.kind]
    hi_ = 4 if square else 5
    q0 = _to_fit(f.box, square)
    q1 = q0.copy()
    q1[hi_] = hn * q0[3] / ln0
    # The fits so far may have taken a side that looked like the print for background (a dark side
    # on black ink): start also with the spec's proportions for the length found.
    starts = [q0, q1, _proportional_start(q0, f.kind)]
    if square and f.outline_start is not None:
        # The first fit took the tower for whatever its parts looked like: start also from a
        # square on its outline's shorter side.
        q2 = _to_fit(np.asarray(f.outline_start[:6], float), True)
        q2[3] = min(f.outline_start[3], f.outline_start[4])
        q2[4] = hn * q2[3] / ln0
        starts.append(q2)
    if tabs:
        # A wall's merlons repeat along it, and its ends on dark ink may hardly show: a fit can
        # settle a merlon short or long. Start also a tenth shorter and longer.
        for k in (0.9, 1.1):
            starts.append(_proportional_start(q0, f.kind, k * q0[3]))
    best = _appearance_search(model, starts)
    # The window was cut around the box the outline gave, which a shadow can carry far from the
    # piece: under two lamps on development render calib_v2_any_3653 the outline's box stood 15 mm
    # off a tower, and the tower, fitted in a window that cut off part of where it stands, settled
    # 9.7 mm too tall with its footprint 4 mm towards the camera. So the fit is searched again in a
    # window around where it settled, also from the spec's proportions for its length.
    moved = copy.copy(f)
    moved.box = _expand(best.x, square)
    recentred = _appearance(moved, scene)
    if recentred is not None:
        model = recentred
        best = _appearance_search(model, [best.x, _proportional_start(best.x, f.kind)])
    dist = _model_distance(model.pts, _expand(best.x, square, tabs), scene.nadir, scene.cam_z)
    f.deep_shadow = _deep_share(dist, model.norm, model.t)
    _apply_appearance(f, model, best.x)


def _relit(scene: _Scene) -> _Scene | None:
    """The scene with its paper in deep shadow shown as the print it covers (None: no such paper)."""
    if scene.deep_shadow is None or not scene.deep_shadow.any():
        return None
    return replace(scene, norm=np.where(scene.deep_shadow[..., None], scene.t01[..., None], scene.norm))


def _shadow_shift(f: PieceFit, relit: _Scene) -> float:
    """How far (mm, new minus old length) piece `f`'s fitted size moves when it is fitted again with the paper in deep
    shadow around it shown as the print it covers (`relit`, _relit): a fit that took in its shadow
    moves back to the piece; a fit that left the shadow out stays. 0 when no such paper lies near it."""
    x0, y0, x1, y1 = _bounds_around(f.box, relit, SHADOW_PAD_MM)
    if not relit.deep_shadow[y0:y1, x0:x1].any():
        return 0.0
    model = _appearance(f, relit)
    if model is None:
        return 0.0
    q0 = _to_fit(f.box, model.square)
    best = _appearance_search(model, [q0, _proportional_start(q0, f.kind)])
    return float(best.x[3]) - f.length_mm


# Share of the surely-not-piece pixels near a piece that its fitted outline may cover before the
# outline is taken to include a shadow (synthetic views: at most 0.034 without shadows, 0.12 and
# more for pieces whose shadow joined them).
SHADOW_VIOLATION = 0.08


@dataclass
class _Evidence:
    piece_mm: np.ndarray  # (N, 2) centres of pixels that are this piece for sure
    background_mm: np.ndarray  # (M, 2) centres of pixels that are surely not a piece
    unknown_mm: np.ndarray  # (U, 2) pixels that may be either (grey on white, shadows)

    @classmethod
    def from_window(cls, piece_px, background_px, labels, label, box, limit: int = 800) -> "_Evidence":
        r0, r1, c0, c1 = box
        lab = labels[r0:r1, c0:c1]
        other = (lab != 0) & (lab != label)
        # Other pieces in the window are neither evidence for nor against this one.
        other = cv2.dilate(other.astype(np.uint8), np.ones((9, 9), np.uint8)) > 0
        own = ndimage.binary_dilation(lab == label, iterations=int(2 * RECT_PX_PER_MM))
        pc = piece_px[r0:r1, c0:c1] & ~other & own
        bg = background_px[r0:r1, c0:c1] & ~other
        un = ~pc & ~bg & ~other & own
        # Only pixels near the piece's border say where the border is.
        near = own & ~ndimage.binary_erosion(lab == label, iterations=int(2 * RECT_PX_PER_MM))
        rng = np.random.default_rng(0)

        def pts(m, keep_edge: bool):
            if keep_edge:
                m = m & near
            ys, xs = np.nonzero(m)
            p = (np.column_stack([xs + c0, ys + r0]) + 0.5) / RECT_PX_PER_MM
            if len(p) > limit:
                p = p[rng.choice(len(p), limit, replace=False)]
            return p

        return cls(pts(pc, True), pts(bg, True), pts(un, False))

    def violation(self, params: np.ndarray, nadir: np.ndarray, cam_z: float) -> float:
        """Share of the background pixels lying more than half a millimetre inside the projected
        piece `params`."""
        if len(self.background_mm) == 0:
            return 0.0
        return float(np.mean(_model_distance(self.background_mm, params, nadir, cam_z) < -0.5))


UNKNOWN_WEIGHT = 0.05


def _fit_evidence(ev: "_Evidence", outline: Polygon, nadir: np.ndarray, cam_z: float, square: bool,
                  start: np.ndarray | None = None, height_prior: tuple[float, float] | None = None,
                  tabs: bool = False) -> tuple[np.ndarray, float]:
    """Fit the projected box to pixel evidence: it must cover the pixels that are surely piece,
    must not cover those surely not, and covers undecided ones (grey on white, shadows) only as
    far as the rest requires."""

    def residuals(q):
        p = _expand(q, square, tabs)
        r = [np.maximum(_model_distance(ev.piece_mm, p, nadir, cam_z), 0) if len(ev.piece_mm) else np.zeros(0),
             np.maximum(-_model_distance(ev.background_mm, p, nadir, cam_z), 0) if len(ev.background_mm) else np.zeros(0),
             UNKNOWN_WEIGHT * np.maximum(-_model_distance(ev.unknown_mm, p, nadir, cam_z), 0) if len(ev.unknown_mm) else np.zeros(0)]
        r = np.concatenate(r)
        if height_prior is not None:
            h0, sigma = height_prior
            r = np.append(r, 0.1 * math.sqrt(max(len(ev.piece_mm), 1) / 4) * (q[4 if square else 5] - h0) / sigma)
        return r

    starts = [start] if start is not None else _start_boxes(np.asarray(outline.exterior.coords), cam_z, (15.0, 35.0))
    lo, hi = _bounds(square, cam_z)
    if start is not None:
        # A shadow only ever adds to an outline, so the piece is not much smaller than the fit
        # that took the shadow in; without this floor a side that lies all on white (no sure
        # evidence) can collapse.
        if square:
            lo[3] = 0.5 * min(start[3], start[4])
        else:
            lo[3], lo[4] = 0.5 * start[3], 0.5 * start[4]
    best = None
    for s0 in starts:
        q0 = np.clip(_to_fit(s0, square), [b + 1e-6 for b in lo], [b - 1e-6 for b in hi])
        res = optimize.least_squares(residuals, q0, bounds=(lo, hi), x_scale=[1, 1, 0.05] + [1] * (len(q0) - 3),
                                     diff_step=1e-3, max_nfev=60 * len(q0))
        if best is None or res.cost < best.cost:
            best = res
    return _oriented_fit(_expand(best.x, square, tabs), outline, nadir, cam_z)


def _subpixel_outline(d: np.ndarray, comp: np.ndarray, thr: float = DIFF_THRESHOLD) -> list[np.ndarray] | None:
    """The piece's outline at half coverage, in rectified pixels (x, y).

    Coverage of a border pixel = its difference from the print over the difference of the nearest
    pixel well inside the piece, so the outline does not depend on how far the piece's grey is
    from black or from white.
    """
    inner = ndimage.binary_erosion(comp, iterations=2)
    if inner.sum() < 10:
        inner = comp
    # The piece's own contrast near each border pixel: a local average over the piece's inside
    # (side faces in shade are less different from the print than the lit top).
    sigma = 1.5 * RECT_PX_PER_MM
    m = inner.astype(np.float32)
    local = cv2.GaussianBlur(d.astype(np.float32) * m, (0, 0), sigma) / np.maximum(cv2.GaussianBlur(m, (0, 0), sigma), 1e-4)
    _, (iy, ix) = ndimage.distance_transform_edt(~inner, return_indices=True)
    ref = np.maximum(np.where(cv2.GaussianBlur(m, (0, 0), sigma) > 0.05, local, d[iy, ix]), 1.5 * thr)
    alpha = np.clip(d / ref, 0, 1)
    region = ndimage.binary_dilation(comp, iterations=4)
    alpha[~region] = 0
    alpha[inner] = 1
    contours = [c for c in measure.find_contours(alpha, 0.5) if len(c) >= 8]
    if not contours:
        return None
    # A piece seen in parts has one contour per part; the outline is then their convex hull (one
    # contour stands for the piece's own, dents and all).
    return [c[:, ::-1] for c in contours]
