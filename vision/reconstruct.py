"""Stage: decide every lattice site and edge by analysis-by-synthesis against the piece mask.

Each candidate piece is a 3-D box standing on its footprint on the table (a tower on a lattice point,
a wall on a lattice edge). Its silhouette in the photo is the convex hull of the box's projected
corners, so an oblique view's lean is modelled, not ignored: a piece is located where it *stands*.
The castle is the set of boxes whose union best explains the grey-piece mask; it is found by
iterated conditional modes (toggle one piece at a time while that improves the fit), which converges
in a few passes because neighbouring pieces only overlap a little.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import cv2
import numpy as np

from vision.camera import Camera
from vision.icm_kernel import icm_kernel
from vision.lattice import Lattice
from vision.silhouette_kernel import silhouette_pixels, union_weight

log = logging.getLogger(__name__)

# Nominal piece sizes in lattice steps (54 mm pitch; spec/pieces-and-photos.md). `Dims.scaled`
# adapts them: the real pieces may differ by +-20 % and the fit chooses the best scale.
TOWER_HALF = 11.0 / 54
TOWER_H = 42.0 / 54
WALL_HALF = 4.5 / 54
WALL_H = 30.0 / 54
KEEP_HALF = 8.0 / 54
KEEP_H = 22.0 / 54


@dataclass(frozen=True)
class Dims:
    """Piece sizes in lattice steps: the nominal ones, or a set's measured ones (vision.profile)."""

    tower_half: float = TOWER_HALF
    tower_h: float = TOWER_H
    wall_half: float = WALL_HALF
    wall_h: float = WALL_H
    keep_half: float = KEEP_HALF
    keep_h: float = KEEP_H

    def wall_extent(self, along_i: bool, half_length: float) -> tuple[float, float]:
        """Half extents (along i, along j) of a wall's box `half_length` long each way from its centre."""
        return (half_length, self.wall_half) if along_i else (self.wall_half, half_length)

    def scaled(self, size: float, height: float) -> "Dims":
        return Dims(self.tower_half * size, self.tower_h * height, self.wall_half * size, self.wall_h * height,
                    self.keep_half * size, self.keep_h * height)


@dataclass
class Element:
    kind: str  # "tower" or "edge"
    key: tuple  # (i, j) for a tower, ((i, j), (k, l)) for an edge
    idx: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # flat pixel indices of its silhouette
    base_px: tuple[float, float] = (0.0, 0.0)  # where its footprint centre is in the image
    clipped: bool = False  # part of its silhouette falls outside the image


# The eight corners of a box, as signs along i, j and up (bottom corner, then top, at each footprint corner).
BOX_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (0, 1)], float)


def element_boxes(kind: str, key: tuple, d: Dims) -> np.ndarray:
    """Corners (8, 3) in lattice units of the box a piece occupies."""
    return PiecePlaces.of([(kind, key)]).corners(d)


@dataclass(frozen=True)
class PiecePlaces:
    """Where many pieces stand, as arrays, so their boxes can be drawn again at other sizes cheaply."""

    tower: np.ndarray  # (N,) bool: a tower, else a wall on an edge
    centre: np.ndarray  # (N, 2) lattice units
    along_i: np.ndarray  # (N, 1) bool: the edge runs along i

    @classmethod
    def of(cls, keys: list[tuple[str, tuple]]) -> "PiecePlaces":
        tower = np.array([kind == "tower" for kind, _ in keys], bool)
        a = np.array([key if kind == "tower" else key[0] for kind, key in keys], float).reshape(-1, 2)
        b = np.array([key if kind == "tower" else key[1] for kind, key in keys], float).reshape(-1, 2)
        return cls(tower, (a + b) / 2.0, (a[:, 1] == b[:, 1])[:, None])

    @cached_property
    def _shape_index(self) -> np.ndarray:
        """Per piece, its row of `corners`' size table: 0 a tower, 1 a wall along i, 2 a wall along j."""
        return np.where(self.tower, 0, np.where(self.along_i[:, 0], 1, 2))

    def corners(self, d: Dims) -> np.ndarray:
        """(N * 8, 3) box corners of pieces of sizes `d`. A wall box spans the whole edge; where a tower
        stands the tower's box covers it anyway, and a long wall does run through the lattice point it
        passes over."""
        # One box per shape, placed at every piece's centre: the silhouette refinement asks for the same
        # pieces' corners at hundreds of sizes. (Signs of +-1 and 0 or 1 scale the sizes exactly.)
        sizes = np.array([(d.tower_half, d.tower_half, d.tower_h), (*d.wall_extent(True, 0.5), d.wall_h),
                          (*d.wall_extent(False, 0.5), d.wall_h)])
        out = (BOX_SIGNS[None] * sizes[:, None, :])[self._shape_index]
        out[:, :, :2] += self.centre[:, None, :]
        return out.reshape(-1, 3)


def build_elements(cam: Camera, shape: tuple[int, int], sites: list[tuple[int, int]], d: Dims,
                   support: np.ndarray | None = None) -> list[Element]:
    """Rasterise every candidate piece's silhouette (cam is in lattice units).

    With `support` (cv2.integral of the pixels that favour a piece), candidates with no such pixel
    in their bounding box are left without pixels: the decision could never take them (see icm), and
    while the lattice is searched only the decisions and their score are used.
    """
    h, w = shape
    keys, places = _candidate_pieces(tuple(sites))
    px = cam.project(places.corners(d)).reshape(len(keys), 8, 2)
    by_axis = px.transpose(0, 2, 1).copy()  # (N, 2, 8): each box's x and y in a row, quicker to reduce
    lo = np.floor(by_axis.min(axis=2)).astype(int)
    hi = np.ceil(by_axis.max(axis=2)).astype(int)
    clipped = (lo[:, 0] < 0) | (lo[:, 1] < 0) | (hi[:, 0] >= w) | (hi[:, 1] >= h)
    clo = np.maximum(lo, 0)
    chi = np.minimum(hi, [w - 1, h - 1])
    bases = ((px[:, 0] + px[:, 2] + px[:, 4] + px[:, 6]) / 4).tolist()  # the corners with z = 0
    outside = np.any(chi < clo, axis=1)
    if support is not None:
        (x0, y0), (x1, y1) = clo.T, chi.T + 1
        inside = ~outside
        x0, y0, x1, y1 = (np.where(inside, v, 0) for v in (x0, y0, x1, y1))
        favoured = support[y1, x1] - support[y0, x1] - support[y1, x0] + support[y0, x0]
        outside |= favoured <= 0
    pixels, starts = silhouette_pixels(np.ascontiguousarray(px, np.float64), w, h, outside)
    ends = starts.tolist()
    base_px = [(0.0, 0.0) if out else (xy[0], xy[1]) for xy, out in zip(bases, outside.tolist())]
    return [Element(kind, key, pixels[a:b], base, clip)
            for (kind, key), a, b, base, clip in zip(keys, ends, ends[1:], base_px, clipped.tolist())]


@lru_cache(maxsize=16)
def _candidate_pieces(sites: tuple[tuple[int, int], ...]) -> tuple[tuple[tuple[str, tuple], ...], PiecePlaces]:
    """Every candidate piece on `sites`: a tower on each, a wall on each edge between two of them; as
    keys (kind, key) and as places. The lattice search asks again and again for the same sites."""
    site_set = set(sites)
    keys: list[tuple[str, tuple]] = [("tower", s) for s in sites]
    for (i, j) in sites:
        for (k, l) in ((i + 1, j), (i, j + 1)):
            if (k, l) in site_set:
                keys.append(("edge", ((i, j), (k, l))))
    return tuple(keys), PiecePlaces.of(keys)


def box_pixels(cam: Camera, shape: tuple[int, int], centre: tuple[float, float], half: tuple[float, float],
               height: float) -> np.ndarray:
    """Flat indices of the pixels a box standing on the table covers (lattice units: centre, half
    extents along i and j, height)."""
    xy = np.asarray(centre, float) + BOX_SIGNS[:, :2] * np.asarray(half, float)
    px = cam.project(np.c_[xy, BOX_SIGNS[:, 2] * height]).reshape(1, 8, 2)
    pixels, _ = silhouette_pixels(np.ascontiguousarray(px, np.float64), shape[1], shape[0], np.zeros(1, bool))
    return pixels


@dataclass
class Decision:
    active: np.ndarray  # bool per element
    margin: np.ndarray  # per element: evidence for its decision, as a fraction of its own pixels (-1..1)
    score: float  # total fit: sum of pixel weights under the union of active silhouettes
    # `active` as the fit decided it: the rule steps (repairs.resolve_with_rules) change `active` in place
    # and leave most margins as the fit measured them.
    fitted: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.fitted = np.array(self.active, bool, copy=True)

    def evidence(self) -> np.ndarray:
        """Per element: the photo's evidence for it as it now stands, as a fraction of its own pixels
        (negative: the photo argues against it). The fit's margin, turned where a rule step changed the
        fit's decision: a wall the rules added where the photo clearly showed none has strong evidence
        against it, not for it."""
        return np.where(self.active == self.fitted, self.margin, -self.margin)


def icm(elements: list[Element], weight: np.ndarray, *, prior: float = 0.0, passes: int = 5,
        init: np.ndarray | None = None, start_favoured: bool = False) -> Decision:
    """Choose the set of pieces whose silhouettes' union best explains `weight` (flat, +1 piece, -1 not).

    `prior` is a per-pixel cost of adding a piece (a small Occam's razor against pieces that explain
    only a few pixels). The toggles start from `init`, else from every piece whose own silhouette the
    evidence favours (`start_favoured`), else from no piece.
    """
    n = len(elements)
    sizes = np.array([len(e.idx) for e in elements], np.int64)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    pixels = np.concatenate([e.idx for e in elements]) if n else np.zeros(0, np.int64)
    weight = np.ascontiguousarray(weight, np.float32)
    if init is not None:
        active = init.copy()
    elif start_favoured:
        # Start from every piece its own silhouette favours, overlaps and all, and let the toggles
        # resolve them: from an empty castle the first pieces taken explain their neighbours' pixels
        # too, and toggling one piece at a time cannot undo such a pair (at 35-50 degrees most wrong
        # readings were such local optima, scoring worse than the true castle).
        sums = np.add.reduceat(np.r_[weight[pixels], 0.0], starts[:-1]) if n else np.zeros(0)
        active = (sizes > 0) & (sums > 0)
    else:
        active = np.zeros(n, bool)
    # Big pieces first: towers explain the most pixels and walls then fill in between.
    order = np.argsort(-sizes, kind="stable")
    active, margin, score = icm_kernel(pixels, starts, order, weight, float(prior), passes, active)
    return Decision(active, margin, score)


@dataclass
class Fit:
    lattice: Lattice
    cam: Camera  # in lattice units
    dims: Dims
    elements: list[Element]
    decision: Decision
    sites: list[tuple[int, int]]
    adj: tuple[float, float, float] = (0.0, 0.0, 1.0)  # camera tilt x, tilt y, focal scale found by the search
    # Lattice points where two walls end in line with no tower between them: two short walls with open
    # ends, not a long wall passing over (told apart by the gap a tower would fill; repairs.open_joints).
    open_joints: set = field(default_factory=set)
    # Elements read present only because the boxes' piece count asked for them, against the photo's (weak)
    # evidence (repairs.add_walls_the_counts_miss): such a reading's exact count is no evidence of its own.
    counted_against_photo: set = field(default_factory=set)
    # Towers the photo shows that the piece count alone read as a long wall's middle instead
    # (repairs.remove_excess_towers): the count was made to fit, so it vouches for nothing either.
    fitted_to_the_count: set = field(default_factory=set)
    weight: np.ndarray | None = None  # the per-pixel evidence the decisions were taken on (flat, +1 piece, -1 not)
    shape: tuple[int, int] = (0, 0)  # of the image that evidence and the camera are in

    def evidence_in_view(self, centre: tuple[float, float], half: tuple[float, float], height: float,
                         cover: np.ndarray) -> tuple[float, float]:
        """Mean evidence over the pixels of a box (lattice units) that no decided piece covers (`cover`,
        from self.cover()), and the share of the box's pixels they are; (0, 0) when none are in view."""
        idx = box_pixels(self.cam, self.shape, centre, half, height)
        seen = idx[cover[idx] == 0]
        if len(seen) == 0:
            return 0.0, 0.0
        return float(self.weight[seen].mean()), len(seen) / len(idx)

    def cover(self, n_pixels: int | None = None) -> np.ndarray:
        """How many decided pieces' silhouettes cover each pixel (flat; `n_pixels` long, else as long as
        the evidence, or to the last pixel any candidate's silhouette reaches)."""
        if n_pixels is None and self.weight is not None:
            n_pixels = len(self.weight)
        if n_pixels is None:
            n_pixels = max((int(el.idx.max()) + 1 for el in self.elements if len(el.idx)), default=0)
        cover = np.zeros(n_pixels, np.int16)
        for el, a in zip(self.elements, self.decision.active):
            if a:
                cover[el.idx] += 1
        return cover


def union_score(cam: Camera, places: PiecePlaces, dims: Dims, shape: tuple[int, int], weight: np.ndarray) -> float:
    """Sum of `weight` (flat) under the union of the silhouettes of pieces at `places`."""
    n = len(places.tower)
    if not n:
        return 0.0
    px = cam.project(places.corners(dims)).reshape(n, 8, 2)
    return union_weight(np.ascontiguousarray(px, np.float64), weight, shape[1], shape[0])


def refine_silhouettes(fit: "Fit", cam_table: Camera, shape: tuple[int, int], weight: np.ndarray,
                       levels: int = 4, start: Dims | None = None, max_size_change: float = 0.2,
                       first_step: float = 1.0) -> tuple[Lattice, Dims, tuple[float, float, float]]:
    """Lattice, piece scale and camera adjustment that best fit the decided pieces' silhouettes.

    Coordinate descent with halving steps over origin, pitch, angle, camera tilt and piece size; the
    set of pieces stays as decided, so each trial is one rasterisation. The piece size stays within
    `max_size_change` of `start` (the sizes the fit began with): an incomplete grey mask is always
    explained a little better by smaller pieces, and repeated refinements would otherwise shrink them.
    """
    start = start or fit.dims
    size_now = fit.dims.tower_half / start.tower_half
    keys = [(el.kind, el.key) for el, a in zip(fit.elements, fit.decision.active) if a]
    if not keys:
        return fit.lattice, fit.dims, fit.adj
    pivot = np.r_[np.mean(np.array(fit.sites, float), axis=0), 0.0]
    places = PiecePlaces.of(keys)
    # The focal length is left alone: near straight down the silhouettes barely constrain it, and it
    # sets how far a keep's top leans, which is how a Double Keep is told from a single one.
    params = np.zeros(7)  # dx, dy (steps), log pitch, angle, tilt x, tilt y, log size
    steps = np.array([0.1, 0.1, 0.02, np.radians(0.5), 0.02, 0.02, 0.05]) * first_step

    # Keeps keep their sizes: the grey mask misses pieces' shaded sides, which biases the refined size,
    # and a keep's expected height is what tells a Double Keep from a single one.
    def state(p: np.ndarray):
        lat = fit.lattice.moved(d_ij=(p[0], p[1]), pitch_factor=float(np.exp(p[2])), d_angle=p[3])
        adj = (fit.adj[0] + p[4], fit.adj[1] + p[5], fit.adj[2])
        size = float(np.exp(p[6]))
        dims = Dims(fit.dims.tower_half * size, fit.dims.tower_h * size, fit.dims.wall_half * size,
                    fit.dims.wall_h * size, fit.dims.keep_half, fit.dims.keep_h)
        return lat, dims, adj

    def score(p: np.ndarray) -> float:
        lat, dims, adj = state(p)
        cam = cam_table.with_table_frame(lat.affine())
        if adj != (0.0, 0.0, 1.0):
            cam = cam.adjusted(pivot, *adj)
        return union_score(cam, places, dims, shape, weight)

    best = score(params)
    for _ in range(levels):
        improved = True
        while improved:
            improved = False
            for i in range(len(params)):
                for sign in (1.0, -1.0):
                    trial = params.copy()
                    trial[i] += sign * steps[i]
                    if abs(np.log(size_now) + trial[6]) > np.log1p(max_size_change):
                        continue
                    s = score(trial)
                    if s > best:
                        params, best, improved = trial, s, True
                        break
        steps = steps / 2
    return state(params)


def candidate_sites(cam: Camera, mask: np.ndarray, margin: int = 1) -> list[tuple[int, int]]:
    """Lattice points near the castle: the mask's pixels mapped onto the table (at half wall height)."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return []
    step = max(1, len(xs) // 20000)
    uv = np.stack([xs[::step], ys[::step]], axis=1).astype(float)
    ij = cam.image_to_plane(uv, z=0.25)
    lo = np.floor(np.percentile(ij, 0.5, axis=0)).astype(int) - margin
    hi = np.ceil(np.percentile(ij, 99.5, axis=0)).astype(int) + margin
    if np.any(hi - lo > 40):  # no real castle is 40 steps across: the mask is not a castle
        return []
    return [(i, j) for i in range(lo[0], hi[0] + 1) for j in range(lo[1], hi[1] + 1)]


def _downscaled(cam: Camera, mask: np.ndarray, dont_care: np.ndarray | None, s: float):
    """The mask and camera at scale s (pixel centres kept consistent with INTER_AREA resizing)."""
    h, w = mask.shape
    size = (max(1, int(round(w * s))), max(1, int(round(h * s))))
    m = cv2.resize(mask.astype(np.float32), size, interpolation=cv2.INTER_AREA)
    d = None if dont_care is None else cv2.resize(dont_care.astype(np.float32), size, interpolation=cv2.INTER_AREA) > 0.5
    S = np.array([[s, 0, 0.5 * s - 0.5], [0, s, 0.5 * s - 0.5], [0, 0, 1.0]])
    return Camera(S @ cam.K, cam.R, cam.t), m, d


def _weights(mask: np.ndarray, dont_care: np.ndarray | None) -> np.ndarray:
    """Per-pixel evidence: +1 certainly a piece, -1 certainly not; a soft mask (0..1) maps linearly."""
    weight = (2.0 * mask.astype(np.float32) - 1.0) if mask.dtype != bool else np.where(mask, 1.0, -1.0).astype(np.float32)
    if dont_care is not None:
        weight[dont_care] = 0.0
    return weight.ravel()


def fit_castle(cam_table: Camera, lattice: Lattice, mask: np.ndarray, dont_care: np.ndarray | None = None,
               *, prior: float = 0.1, search_scale: float = 0.33,
               plausibility=None, pitch_known: bool = False, focal_known: bool = False,
               dims: Dims = Dims()) -> Fit | None:
    """Refine the lattice and piece scale against the mask, then decide every site and edge.

    cam_table is the camera in table units; the lattice maps lattice steps to table units. The search
    over lattice offset, pitch and piece scale runs on a downscaled mask (it only needs to be right to
    a fraction of a pitch); the final decisions use the full-resolution mask. `dims` are the piece
    sizes the search starts from and scales (a set's measured sizes, or the nominal ones). With
    `focal_known` (the photo's EXIF or a camera profile gave the focal length) the search does not try
    other focal lengths.
    """
    start_dims = dims
    cam_small, mask_small, dc_small = _downscaled(cam_table, mask, dont_care, search_scale)
    weight_small = _weights(mask_small, dc_small)

    adj0 = (0.0, 0.0, 1.0)

    # Where the downscaled mask favours a piece: candidates with none of it are skipped while searching.
    support_small = cv2.integral((weight_small > 0).reshape(mask_small.shape).astype(np.uint8))

    def evaluate(lat: Lattice, dims: Dims, init_sites=None, cam_t=cam_small, m=mask_small, weight=weight_small, adj=adj0,
                 support=support_small, final=False):
        cam = cam_t.with_table_frame(lat.affine())
        sites = init_sites if init_sites is not None else candidate_sites(cam, m > 0.5)
        if sites and adj != adj0:
            pivot = np.r_[np.mean(np.array(sites, float), axis=0), 0.0]
            cam = cam.adjusted(pivot, *adj)
        if not sites:
            return None
        els = build_elements(cam, m.shape, sites, dims, support)
        dec = icm(els, weight, prior=prior, start_favoured=final)
        return Fit(lat, cam, dims, els, dec, sites, adj, weight=weight, shape=m.shape)

    def polish(fit: Fit) -> Fit:
        """Refine lattice, camera and piece size on the decided pieces, decide again; twice at most."""
        for _ in range(2):
            lat, d, adj = refine_silhouettes(fit, cam_small, mask_small.shape, weight_small, start=start_dims)
            f = evaluate(lat, d, init_sites=fit.sites, adj=adj)
            if f is None or f.decision.score <= fit.decision.score:
                break
            fit = f
        return fit

    # The top view's comb can also look periodic at other pitches, and its phase is biased by the
    # pieces' lean (half a step off puts every line between the pieces): let the synthesis decide.
    best, best_key, best_plaus, base_score = None, 0.0, 0.0, 0.0
    first, first_key = None, 0.0  # the best at the top view's own pitch
    # Half-step phases only: the coordinate search below (steps of 0.3, 0.15 and 0.06) and the refits
    # place the lattice within them (a grid of quarter steps read no better, at 12 more decisions).
    half_steps = ((0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.5, 0.5))
    factors: list[float] = [1.0]
    for f in [a / lattice.pitch for a in lattice.alternatives] + [2.0, 0.5, 1 / 3]:
        if all(abs(np.log(f / g)) > 0.1 for g in factors):
            factors.append(f)
    candidates = [(f, ((0.0, 0.0),) if f >= 1.5 else half_steps) for f in factors]
    for factor, offsets in candidates[:1] if pitch_known else candidates:
        for off in offsets:
            lat = lattice.moved(pitch_factor=factor).moved(d_ij=off)
            f = evaluate(lat, dims)
            if f is None:
                continue
            # A castle of half the true pitch explains the pixels about as well but breaks the rules
            # everywhere; the plausibility (0..1) from the caller weighs that in.
            plaus = plausibility(f) if plausibility is not None else 1.0
            f_key = f.decision.score * plaus
            log.debug("pitch candidate x%.3f offset %s: fit %.0f, plausibility %.3f, %d pieces",
                      factor, off, f.decision.score, plaus, int(f.decision.active.sum()))
            if factor == 1.0:
                base_score = max(base_score, f.decision.score)
                if first is None or f_key > first_key:
                    first, first_key = f, f_key
            elif f.decision.score < 1.1 * base_score:
                continue  # another pitch must explain clearly more of the photo, not just break fewer rules
            if best is None or f_key > best_key:
                best, best_key, best_plaus = f, f_key, plaus
        expected = getattr(plausibility, "expected_elements", None)
        if factor == 1.0 and best is not None and best_plaus >= 0.4 and (expected is None or best.decision.active.sum() >= 0.6 * expected):
            break  # the top view's pitch already gives a plausible, full-sized castle: no other pitch
    if best is None:
        return None
    judge = plausibility if plausibility is not None else (lambda fit: 1.0)
    if first is not None and best is not first:
        # Another pitch won, but the top view's pitch may only have lost to a pose a few degrees off
        # (the lattice drifts off the pieces towards the edges, and smaller pieces fit the drift):
        # compare the two again once each has been fitted properly.
        best, first = polish(best), polish(first)
        if best.decision.score < 1.1 * first.decision.score or \
                best.decision.score * judge(best) < first.decision.score * judge(first):
            best = first
    # Coordinate search: origin (the lattice phase from the top view is biased by the pieces' lean),
    # then pitch, then the pieces' size and height (+-20 % in spec).
    steps = [
        [("d", (dx, 0.0)) for dx in (-0.3, -0.15, 0.15, 0.3)],
        [("d", (0.0, dy)) for dy in (-0.3, -0.15, 0.15, 0.3)],
        [("d", (dx, dy)) for dx, dy in ((-0.06, 0.0), (0.06, 0.0), (0.0, -0.06), (0.0, 0.06))],
        [("p", f) for f in (0.97, 1.03)],
        [("s", (s, hh)) for s, hh in ((0.93, 0.93), (1.07, 1.07))],
        # A pose from vanishing points is a few degrees off; let the photo correct it, then re-centre.
        [("t", (dx, 0.0, 1.0)) for dx in (-0.05, 0.05)],
        [("t", (0.0, dy, 1.0)) for dy in (-0.05, 0.05)],
        # Only a guessed focal length is searched: a known one is right to a few per cent, and a step of
        # a fifth, traded off against the piece size and pitch, wins near ties and moves it off.
        [] if focal_known else [("t", (0.0, 0.0, f)) for f in (0.82, 1.2)],
        [("d", (dx, dy)) for dx, dy in ((-0.08, 0.0), (0.08, 0.0), (0.0, -0.08), (0.0, 0.08))],
    ]
    for group in steps:
        cand_best = best
        for kind, val in group:
            lat, dims, adj = best.lattice, best.dims, best.adj
            if kind == "t":
                adj = (adj[0] + val[0], adj[1] + val[1], adj[2] * val[2])
            elif kind == "d":
                lat = lat.moved(d_ij=val)
            elif kind == "p":
                lat = lat.moved(pitch_factor=val)
            else:
                dims = start_dims.scaled(*val)
            f = evaluate(lat, dims, init_sites=best.sites, adj=adj)
            if f is not None and f.decision.score > cand_best.decision.score:
                cand_best = f
        best = cand_best
    # The steps above are coarse; the pose from vanishing points is often a few degrees off, which lets
    # the lattice drift off the pieces towards the castle's edges. Refine all of it together, keeping
    # the decided pieces, then decide again.
    best = polish(best)
    # Final decisions at full resolution, on the full candidate range for the refined lattice.
    weight_full = _weights(mask, dont_care)
    final = evaluate(best.lattice, best.dims, init_sites=best.sites, cam_t=cam_table, m=mask,
                     weight=weight_full, adj=best.adj, support=None, final=True)
    if final is None:
        return None
    # The search fitted the downscaled mask, to a pixel or two there; at full size the silhouettes are
    # matched once more with small steps (a few pixels of pose error misplaces thin walls).
    lat, d, adj = refine_silhouettes(final, cam_table, mask.shape, weight_full, levels=2, start=start_dims, first_step=0.25)
    again = evaluate(lat, d, init_sites=final.sites, cam_t=cam_table, m=mask, weight=weight_full, adj=adj, support=None, final=True)
    return again if again is not None and again.decision.score > final.decision.score else final
