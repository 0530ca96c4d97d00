"""Stage: find the keeps, tell their colour, and tell a Double Keep from a single one by its height.

A keep is a small coloured box. Its blob in the photo is matched against the projected silhouettes
of a single (22 mm) and a double (44 mm) keep standing on the table where the blob's base must be;
the better match decides, and the difference between the two matches is the decision's margin.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import cv2
import numpy as np

from vision.camera import Camera
from vision.masks import KEEP_COLOURS
from vision.reconstruct import BOX_SIGNS, Dims
# Pixels between where a single and a Double Keep's top would be seen: below this, the photo cannot
# show which one it is.
MIN_LEAN_PX = 6.0
# A keep is read double from its outline when two stacked keeps explain its blob better than one, but
# Double Keeps are rare (one per player at most): on 946 keeps of 80 development photos, of the 15 read
# double by an IoU lead under 0.08, 10 were single (4 of 129 read single that way were double). A double
# reading's confidence is therefore judged on its lead less this much.
DOUBLE_LEAD = 0.06
# A blob is a keep only if a keep's silhouette covers it with an IoU of 0.3 or more (_find_keeps_sized); a
# blob of this share of a single keep's silhouette there could reach that only with nine tenths of the keep
# hidden, so smaller ones are not tried. (A gingham tablecloth's checks gave 2,226 coloured specks inside one
# castle, most under 2 % of a keep: fitting them took 12 of a reading's 17 CPU-s.)
MIN_BLOB_SHARE = 0.03
# The most a keep whose height is in doubt is trusted (a cap on its confidence).
HEIGHT_CAP = 0.25
# Why a keep's height is a likely misread (FoundKeep.doubt), as the reader compares it with its colour's others.
TALLER_THAN_ITS_COLOUR = "taller than its colour's others"
BIGGER_THAN_ITS_COLOUR = "bigger than its colour's others"
STACKED_BY_A_SMALL_LEAD = "stacked by a small lead"
ITS_COLOUR_ALL_LOOK_STACKED = "its colour's other keeps look as big as a Double Keep"
# Why a keep read weakly for its height is single after all (C5: its colour's one Double Keep is read surely).
SINGLE_BESIDE_ITS_DOUBLE = "single: its colour's Double Keep is read"


@dataclass
class FoundKeep:
    colour: str
    at: tuple[float, float]  # lattice units, where it stands
    double: bool
    confidence: float
    px: tuple[float, float]
    outline: np.ndarray  # image polygon of the chosen silhouette
    stacked: float = 0.0  # how much better two stacked keeps explain the blob than one (IoU difference)
    fill: float = 1.0  # the blob's area over a single keep's silhouette there (low: its sides were missed)
    lean: float = MIN_LEAN_PX  # pixels between where a single and a Double Keep's top would be seen there
    double_fill: float = 1.0  # the fill a Double Keep would show there (its silhouette's area over a single's)
    iou: float = 0.0  # how well the chosen silhouette covers the blob
    height_by_size: bool = False  # single or double read from the blob's size (heights_from_size), not its outline
    doubt: str = ""  # why its height's confidence was lowered last, if it was

    @property
    def height_doubt(self) -> bool:
        """Single or double is a likely misread (weighed as confidence.HEIGHT_DOUBT)."""
        return self.doubt in (TALLER_THAN_ITS_COLOUR, BIGGER_THAN_ITS_COLOUR, STACKED_BY_A_SMALL_LEAD,
                              ITS_COLOUR_ALL_LOOK_STACKED)


# Where a keep may stand around its blob's centre, and how it may be turned: the candidates searched.
_SHIFTS = np.array([[dx, dy] for dx in (-0.06, 0.0, 0.06) for dy in (-0.06, 0.0, 0.06)])
_YAWS = np.array([0.0, 0.39, 0.785, 1.18])


def _silhouettes(cam: Camera, at: np.ndarray, half: float, height: float, yaws: np.ndarray) -> list[np.ndarray]:
    """Image outlines (convex hulls) of keeps standing at each of `at` (N, 2), turned by `yaws` (N,)."""
    c, sn = np.cos(yaws)[:, None], np.sin(yaws)[:, None]
    dx, dy = BOX_SIGNS[None, :, 0] * half, BOX_SIGNS[None, :, 1] * half
    corners = np.stack([at[:, :1] + c * dx - sn * dy, at[:, 1:] + sn * dx + c * dy,
                        np.broadcast_to(BOX_SIGNS[:, 2] * height, (len(at), 8))], axis=2)
    px = cam.project(corners.reshape(-1, 3)).reshape(len(at), 8, 2).astype(np.float32)
    return [cv2.convexHull(q).reshape(-1, 2) for q in px]


def _silhouette(cam: Camera, at: np.ndarray, half: float, height: float, yaw: float = 0.0) -> np.ndarray:
    """Image outline of one keep standing at `at` (lattice units), turned by `yaw`."""
    return _silhouettes(cam, np.asarray(at, float).reshape(1, 2), half, height, np.array([yaw]))[0]


def _window(corners: np.ndarray, bbox: tuple[int, int, int, int],
            shape: tuple[int, int]) -> tuple[slice, slice] | None:
    """Rows and columns of the photo (`shape`) that hold a blob (bbox x, y, w, h) and every silhouette
    (`corners`: all their corners, (N, 2)), with a margin; None when they lie outside the photo."""
    H, W = shape
    bx, by, bw, bh = bbox
    lo = np.minimum(corners.min(axis=0, initial=np.inf), (bx, by))
    hi = np.maximum(corners.max(axis=0, initial=-np.inf), (bx + bw, by + bh))
    x0, y0 = int(max(0, lo[0] - 2)), int(max(0, lo[1] - 2))
    x1, y1 = int(min(W, hi[0] + 3)), int(min(H, hi[1] + 3))
    if x1 <= x0 or y1 <= y0:
        return None
    return slice(y0, y1), slice(x0, x1)


def _ious(polys: list[np.ndarray], corners: np.ndarray, blob: np.ndarray, window: tuple[slice, slice] | None,
          hidden: np.ndarray | None = None) -> list[tuple[float, int]]:
    """(IoU, pixels in view) of each silhouette (`corners`: theirs one after another) against a blob,
    leaving out the silhouettes' `hidden` pixels (a mask of the window). All are drawn in the `window`
    of the photo (_window), one tile each, and counted together."""
    if window is None:
        return [(0.0, 0)] * len(polys)
    rows, cols = window
    b = blob[window]
    tiles = np.zeros((len(polys), rows.stop - rows.start, cols.stop - cols.start), np.uint8)
    # Quarter-pixel fixed point (shift=2): the silhouettes' corners do not fall on whole pixels.
    fixed = np.round((corners - [cols.start, rows.start]) * 4).astype(np.int32)
    ends = np.cumsum([len(p) for p in polys]).tolist()
    for tile, start, end in zip(tiles, [0, *ends[:-1]], ends):
        cv2.fillConvexPoly(tile, fixed[start:end], 1, shift=2)
    seen = tiles.view(bool)  # (the silhouettes are drawn as ones)
    if hidden is not None:
        seen &= ~hidden
    in_seen = np.count_nonzero(seen, axis=(1, 2))
    inter = np.count_nonzero(seen & b, axis=(1, 2))
    iou = inter / np.maximum(1, in_seen + np.count_nonzero(b) - inter)
    return list(zip(iou.tolist(), in_seen.tolist()))


@dataclass(frozen=True)
class Occluders:
    """The grey pieces read so far, which can hide part of a keep behind them: each piece's footprint
    centre (lattice units) and its silhouette's flat pixel indices, and the grey plastic the photo shows."""

    centres: np.ndarray  # (N, 2)
    silhouettes: tuple[np.ndarray, ...]
    grey: np.ndarray  # bool (H, W)

    def hiding(self, cam: Camera, at: np.ndarray, window: tuple[slice, slice], reach: float = 2.5) -> np.ndarray:
        """Grey pixels of the pieces between the camera and a keep standing at `at`, in the photo's
        `window` (rows, columns)."""
        hidden = np.zeros(self.grey.shape, bool)
        flat = hidden.reshape(-1)
        eye = -cam.R.T @ cam.t  # the camera's centre in the table frame
        keep_dist = float(np.hypot(*(eye[:2] - at)))
        near = np.hypot(*(self.centres - at).T) < reach
        nearer = np.hypot(*(self.centres - eye[:2]).T) < keep_dist - 0.1
        for k in np.flatnonzero(near & nearer):
            flat[self.silhouettes[k]] = True
        return hidden[window] & self.grey[window]


def _best_fits(cam: Camera, blob: np.ndarray, centroid: tuple[float, float], bbox: tuple[int, int, int, int],
               half: float, h1: float, occluders: Occluders | None = None) -> dict[bool, tuple[float, np.ndarray, np.ndarray, int]]:
    """{double: (IoU, where it stands, silhouette, its pixels in view)} of the best single and the best
    stacked keep for a blob; with `occluders`, the part of a silhouette hidden by the pieces in front of
    it is left out.

    Keeps stand at any angle and anywhere in their courtyard: position and yaw are searched for each
    height; the better best IoU decides single or double.
    """
    per_h = {}
    for double in (False, True):
        hk = h1 * (2 if double else 1)
        at0 = cam.image_to_plane(np.array([centroid], float), z=hk / 2)[0]
        at = np.repeat(at0 + _SHIFTS, len(_YAWS), axis=0)
        polys = _silhouettes(cam, at, half, hk, np.tile(_YAWS, len(_SHIFTS)))
        corners = np.concatenate(polys)
        window = _window(corners, bbox, blob.shape)
        hidden = occluders.hiding(cam, at0, window) if occluders is not None and window is not None else None
        scores = _ious(polys, corners, blob, window, hidden)
        best = max(range(len(polys)), key=lambda i: scores[i][0])  # the first of equals, as searched
        per_h[double] = (scores[best][0], at[best], polys[best], scores[best][1])
    return per_h


def find_keeps(cam: Camera, keep_label: np.ndarray, dims: Dims, ground: np.ndarray | None = None,
               castle: np.ndarray | None = None, occluders: Occluders | None = None, *, min_keeps: int = 3,
               size_tolerance: float = 0.05) -> list[FoundKeep]:
    """Keeps in the photo (cam in lattice units; dims gives the keep's size, at the fitted piece scale).

    `ground` marks table pixels: outside the castle (`castle` mask) a keep stands on the table, so a
    coloured blob surrounded by something else (the game box's print, a card) is not a keep. Inside
    the castle a keep's surroundings are walls, shadows and its own dark sides, so no such test.
    With `occluders` (the grey pieces read), a keep's blob is compared with the part of its
    silhouette that the pieces in front of it leave in view.

    Single and double are told apart by how well each silhouette covers a blob, which favours the
    smaller one when blobs come out smaller than the keeps (a pixel lost all round, a piece scale a
    little off). So when the single keeps (at least `min_keeps`) cover their silhouettes by more than
    `size_tolerance` less or more than fully, the keeps are found again at the size their blobs show.
    Keeps seen from so nearly straight above that their outline cannot show their height are then read
    by their size against the photo's other keeps (heights_from_size).
    """
    blobs = _colour_blobs(keep_label)
    found = _find_keeps_sized(cam, keep_label, blobs, dims, ground, castle, occluders)
    fills = [k.fill for k in found if not k.double]
    typical_fill = float(np.median(fills)) if fills else 1.0
    if len(fills) >= min_keeps and abs(typical_fill - 1.0) > size_tolerance:
        s = math.sqrt(typical_fill)  # area scales as the square of the size
        # Which blobs are keeps was decided at the fitted piece scale; only their heights are read again.
        again = {_blob_key(k.colour, k.px): k for k in _find_keeps_sized(
            cam, keep_label, blobs, replace(dims, keep_half=dims.keep_half * s, keep_h=dims.keep_h * s), ground, castle,
            occluders, only={_blob_key(k.colour, k.px) for k in found})}
        found = [again.get(_blob_key(k.colour, k.px), k) for k in found]
    return heights_from_size(found)


def shape_confidence(iou: float) -> float:
    """How surely a blob that a keep's silhouette covers this well is a keep seen whole."""
    return float(np.clip(iou / 0.6, 0, 1))


def heights_from_size(found: list[FoundKeep], *, min_keeps: int = 5, noise_floor: float = 0.1,
                      per_sigma: float = 0.1, min_separation: float = 2.5) -> list[FoundKeep]:
    """Single or double by the blob's size where the photo cannot show a keep's height by its lean.

    Seen from nearly straight above, a Double Keep's silhouette is its top face, only nearer the
    camera: a few percent bigger than a single keep's (`double_fill`), and the silhouettes' IoU cannot
    tell them apart. Its blob's size can, measured against the photo's other keeps (their median
    fill, most keeps being single; their spread is the noise). A keep whose top would lean less than
    MIN_LEAN_PX is read double when its fill is nearer, in ratio, to a double's than to a single's; its
    `stacked` evidence becomes `per_sigma` per standard deviation of the keeps' fills beyond that
    midpoint, and its confidence how many standard deviations away from it the fill is, unless a
    single's and a double's fills lie less than `min_separation` standard deviations apart or the
    blob's fill is more than three from both.
    Needs `min_keeps` keeps to measure the typical fill and its spread. The spread is at least
    `noise_floor`: one photo's few keeps understate it. Over four development keep probes (unseen17-19),
    single keeps' log fills lay about their photo's median with a 90th percentile of 0.1 to 0.6 per
    colour and table (a red keep's colour bleeds into a wooden table around it), while one photo's keeps
    gave 0.044 on unseen21a photo_069, which put a single red keep 2.5 spreads past the midpoint: a
    Double Keep at full confidence, and a wrong score. At that floor a single's and a double's fills
    are seldom `min_separation` apart, so the size's reading is no surer than the outline's; on dev
    unseen19-21 that refused two wrong answers (0.825 and 1.0, both a single red keep read double by
    size) and one right one.
    """
    if len(found) < min_keeps:
        return found
    log_fill = np.log(np.maximum([k.fill for k in found], 1e-3))
    typical = float(np.median(log_fill))
    sigma = max(noise_floor, 1.4826 * float(np.median(np.abs(log_fill - typical))))
    for k, lf in zip(found, log_fill):
        if k.lean >= MIN_LEAN_PX or k.double_fill <= 1.0:
            continue
        double_log = math.log(k.double_fill)
        z = (lf - typical - 0.5 * double_log) / sigma
        by_outline = (k.double, k.confidence)
        k.double, k.height_by_size = bool(z > 0), True
        k.stacked = float(np.clip(per_sigma * z, -1.0, 1.0))
        k.confidence = shape_confidence(k.iou) * float(np.clip(abs(z) / 2.0, 0.2, 1.0))
        k.doubt = "size between single and double" if abs(z) < 2.0 else ""
        # Blobs whose sizes scatter about as widely as a single and a double differ (keeps merged with a
        # shadow, or missing a side), or a blob far bigger or smaller than either, still tell heights
        # better than the outline does (on development renders), but not surely: no surer than the
        # outline's own reading when they agree, and weak when they do not.
        if double_log < min_separation * sigma or min(abs(lf - typical), abs(lf - typical - double_log)) > 3.0 * sigma:
            k.confidence = min(k.confidence, by_outline[1] if by_outline[0] == k.double else HEIGHT_CAP)
            k.doubt = "sizes scatter"
    return found


def _blob_key(colour: str, centroid: tuple[float, float]) -> tuple[str, int, int]:
    """A blob named by its colour and centroid: the same in every pass over one keep label image."""
    return colour, round(centroid[0]), round(centroid[1])


def clean_keep_pixels(mask: np.ndarray) -> np.ndarray:
    """A keep colour's pixels (bool or 0/1) as the keep stage reads them: specks opened away, pinholes
    closed (uint8 0/1)."""
    m = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    return cv2.morphologyEx(m, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))


def _colour_blobs(keep_label: np.ndarray) -> list[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Per keep colour, its cleaned-up pixels' connected components: (colour, count, labels, stats,
    centroids) as cv2.connectedComponentsWithStats gives them."""
    return [(colour, *cv2.connectedComponentsWithStats(clean_keep_pixels(keep_label == li)))
            for li, colour in enumerate(KEEP_COLOURS, start=1)]


def _find_keeps_sized(cam: Camera, keep_label: np.ndarray, blobs: list, dims: Dims, ground: np.ndarray | None,
                      castle: np.ndarray | None, occluders: Occluders | None = None,
                      only: set[tuple[str, int, int]] | None = None) -> list[FoundKeep]:
    """find_keeps for keeps of the size `dims` gives, among `blobs` (_colour_blobs); with `only`, just
    the blobs it names (_blob_key)."""
    half, h1 = dims.keep_half, dims.keep_h
    found: list[FoundKeep] = []
    H, W = keep_label.shape
    for colour, n, lab, stats, cents in blobs:
        tried = [k for k in range(1, n) if stats[k, cv2.CC_STAT_AREA] >= 12
                 and (only is None or _blob_key(colour, cents[k]) in only)]
        for k, keep_area in zip(tried, _keep_areas(cam, cents[tried], half, h1)):
            area = stats[k, cv2.CC_STAT_AREA]
            if area < MIN_BLOB_SHARE * keep_area:
                continue  # a speck of keep colour (a tablecloth's check, print), far smaller than a keep there
            # The blob as a photo-sized mask, filled only within its bounding box (the rest is all False).
            bx, by, bw_, bh_ = stats[k, :4]
            blob = np.zeros((H, W), bool)
            blob[by:by + bh_, bx:bx + bw_] = lab[by:by + bh_, bx:bx + bw_] == k
            # A keep's blob is compact; a card's coloured border or the box's print is not.
            # (A pixel of margin, so the crop's edge is not the blob's; contours and areas do not move.)
            crop = blob[max(0, by - 1):by + bh_ + 1, max(0, bx - 1):bx + bw_ + 1]
            cnts, _ = cv2.findContours(crop.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
            hull_area = cv2.contourArea(cv2.convexHull(max(cnts, key=cv2.contourArea)))
            if hull_area <= 0 or area / hull_area < 0.6:
                continue
            cx, cy = int(round(cents[k][0])), int(round(cents[k][1]))
            inside = castle is not None and castle[min(H - 1, max(0, cy)), min(W - 1, max(0, cx))]
            if ground is not None and not inside:
                x, y, bw, bh = stats[k, :4]
                pad = 8
                ys0, xs0 = max(0, y - pad), max(0, x - pad)
                sub = blob[ys0:y + bh + pad, xs0:x + bw + pad].astype(np.uint8)
                ring = cv2.dilate(sub, np.ones((9, 9), np.uint8)) & ~cv2.dilate(sub, np.ones((3, 3), np.uint8))
                ring = ring.astype(bool) & ~(keep_label[ys0:y + bh + pad, xs0:x + bw + pad] > 0)
                if ring.any() and ground[ys0:y + bh + pad, xs0:x + bw + pad][ring].mean() < 0.5:
                    continue
            per_h = _best_fits(cam, blob, (cents[k][0], cents[k][1]), tuple(stats[k, :4]), half, h1, occluders)
            if not per_h:
                continue
            double = max(per_h, key=lambda d: per_h[d][0])
            iou, at, poly, in_view = per_h[double]
            other = per_h.get(not double, (0.0,))[0]
            if iou < 0.3:
                continue  # a coloured speck or a card, not a keep-shaped thing
            if not 0.35 <= area / max(1.0, in_view) <= 1.8:
                continue  # far bigger or smaller than a keep there would look: the box, a card
            lead = iou - other - (DOUBLE_LEAD if double else 0.0)
            conf = float(shape_confidence(iou) * np.clip(lead / 0.2 + 0.4, 0, 1))
            # Seen from straight above, a Double Keep differs from a single one only by how far its top
            # leans; where that difference is a few pixels the height cannot be told, so say so.
            lean = np.linalg.norm(cam.project(np.array([[at[0], at[1], 2 * h1]])) - cam.project(np.array([[at[0], at[1], h1]])))
            by_lean = float(np.clip(lean / MIN_LEAN_PX, 0.2, 1.0))
            doubt = "little lean" if by_lean < conf else ""
            conf = min(conf, by_lean)
            stacked = per_h[True][0] - per_h[False][0] if len(per_h) == 2 else (1.0 if double else -1.0)
            single_area = cv2.contourArea(per_h[False][2].astype(np.float32)) if False in per_h else 0.0
            double_area = cv2.contourArea(per_h[True][2].astype(np.float32)) if True in per_h else 0.0
            found.append(FoundKeep(colour, (float(at[0]), float(at[1])), double, conf,
                                   (float(cents[k][0]), float(cents[k][1])), poly, float(stacked),
                                   fill=float(area / single_area) if single_area > 0 else 1.0,
                                   lean=float(lean), iou=float(iou),
                                   double_fill=float(double_area / single_area) if single_area > 0 else 1.0,
                                   doubt=doubt))
    return _merge_fragments(found, 2.5 * half)


def _keep_areas(cam: Camera, centroids: np.ndarray, half: float, height: float) -> np.ndarray:
    """The image area (pixels) of a single keep standing where each blob centroid (N, 2) is seen."""
    if len(centroids) == 0:
        return np.zeros(0)
    at = cam.image_to_plane(np.asarray(centroids, float), z=height / 2)
    return np.array([cv2.contourArea(p) for p in _silhouettes(cam, at, half, height, np.zeros(len(at)))])


def _merge_fragments(found: list[FoundKeep], radius: float) -> list[FoundKeep]:
    """One keep can fall apart into blobs (its lit top and shaded side): keep the surest of each group."""
    kept: list[FoundKeep] = []
    for k in sorted(found, key=lambda k: -k.confidence):
        if any(o.colour == k.colour and math.dist(o.at, k.at) < radius for o in kept):
            continue
        kept.append(k)
    return kept
