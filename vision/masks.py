"""Stage: per-pixel masks of the grey plastic and of the four keep colours, with white balance.

The table is learned from the photo's border (the castle is framed inside it): a smoothed colour
histogram of the border says what "table" looks like, in whatever colour, pattern or lightness.
The white balance is taken from the most neutral non-table pixels: the pieces' grey plastic is the
neutral reference. Which pixels are grey plastic and which are keeps is then decided by the pixel
model (vision.pixels), from these cues and their neighbourhood; the colour rules it replaced (grey:
close to neutral *and* unlike the table; keeps: strongly coloured) remain as `learned=False`, the
second opinion when the model sees no castle at all. A keep's colour is read by hue after the white
balance, so a warm lamp does not turn yellow into red.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping, Sequence

import cv2
import numpy as np
from skimage import color

from vision.pixels import FEATURE_SIDE, PixelModels, class_probabilities, pixel_features

KEEP_COLOURS = ("red", "yellow", "green", "blue")
# Hue centres on OpenCV's 0..180 scale, after white balance: typical keeps, used without a colour profile.
HUE_CENTRES = {"red": 0.0, "yellow": 27.0, "green": 62.0, "blue": 112.0}

_L_BINS, _AB_BINS = 16, 48


@dataclass
class Masks:
    balanced: np.ndarray  # BGR uint8 after white balance
    gains: np.ndarray  # (3,) BGR multipliers that made the grey plastic neutral
    grey: np.ndarray  # bool: grey plastic (piece) pixels
    keep: np.ndarray  # bool: saturated keep-coloured pixels
    keep_label: np.ndarray  # uint8: 0 none, 1..4 index into KEEP_COLOURS + 1
    table_like: np.ndarray  # float 0..1: how much each pixel looks like the table
    grey_soft: np.ndarray  # float 0..1: piece evidence; dark neutral pixels on a neutral table may be shadow
    brightness: float  # 99th percentile of V (0..255): the lit parts, for the "too dark" refusal
    contrast: float  # 0..1: how separable the grey plastic is from the table


def _border(shape: tuple[int, int], frac: float = 0.07) -> np.ndarray:
    h, w = shape
    b = np.zeros(shape, bool)
    bh, bw = max(2, int(frac * h)), max(2, int(frac * w))
    b[:bh], b[-bh:], b[:, :bw], b[:, -bw:] = True, True, True, True
    return b


def table_likelihood(lab: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """0..1 per pixel: how common its (L, a, b) is among the sampled table pixels.

    The histogram is blurred along L more than along a, b: lighting varies the table's lightness
    (vignetting, soft shading) much more than its colour.
    """
    L = (lab[:, :, 0].astype(np.int32) * _L_BINS) >> 8
    A = (lab[:, :, 1].astype(np.int32) * _AB_BINS) >> 8
    B = (lab[:, :, 2].astype(np.int32) * _AB_BINS) >> 8
    flat = (L * _AB_BINS + A) * _AB_BINS + B
    hist = np.bincount(flat[sample], minlength=_L_BINS * _AB_BINS * _AB_BINS).astype(np.float32)
    hist = hist.reshape(_L_BINS, _AB_BINS, _AB_BINS)
    # Separable blur: about one bin in L (lighting varies lightness), less in a, b.
    for i in range(_L_BINS):
        hist[i] = cv2.GaussianBlur(hist[i], (5, 5), 0.8, borderType=cv2.BORDER_CONSTANT)
    kern = cv2.getGaussianKernel(7, 1.2).ravel().astype(np.float32)
    hist = cv2.filter2D(hist.reshape(_L_BINS, -1), -1, kern[:, None], borderType=cv2.BORDER_CONSTANT).reshape(hist.shape)
    # Self-calibrating scale: the density that three quarters of the table samples reach counts as
    # fully table-like, so the threshold means the same on plain and on patterned tables.
    at_samples = hist.ravel()[flat[sample]]
    ref = float(np.percentile(at_samples, 25)) if at_samples.size else 1.0
    # Scaled bin by bin, then looked up: the same values as scaling every pixel, a pass over the photo fewer.
    return np.clip(hist.ravel() / max(ref, 1e-9), 0, 1)[flat]


def table_chromaticity_likelihood(bgr: np.ndarray, sample: np.ndarray, bins: int = 64) -> np.ndarray:
    """0..1 per pixel: how common its chromaticity (colour without brightness) is on the table.

    r = R / (R + G + B) and g = G / (R + G + B) do not change when a shadow darkens the table, so a
    shadow on a green cloth still looks like the cloth here (it does not in Lab, whose a, b shrink).
    """
    f = bgr.astype(np.float32) + 3.0
    tot = f[:, :, 0] + f[:, :, 1] + f[:, :, 2]  # exact (small integers); a sum over axis 2 is several times slower
    r = np.clip((f[:, :, 2] / tot * bins).astype(np.int32), 0, bins - 1)
    g = np.clip((f[:, :, 1] / tot * bins).astype(np.int32), 0, bins - 1)
    flat = r * bins + g
    hist = np.bincount(flat[sample], minlength=bins * bins).astype(np.float32).reshape(bins, bins)
    hist = cv2.GaussianBlur(hist, (5, 5), 1.0)
    ref = float(np.percentile(hist.ravel()[flat[sample]], 25)) if sample.any() else 1.0
    return np.clip(hist.ravel() / max(ref, 1e-9), 0, 1)[flat]  # (bin by bin, as table_likelihood)


def white_balance_gains(bgr: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """BGR gains that make the candidates (non-table, not strongly coloured: the grey plastic) neutral.

    The photo is usually white-balanced by the phone already, so the correction is limited to what a
    warm lamp or cold daylight can leave over (gains within 0.75..1.33).
    """
    # The brightest channel, + 1 as the median's below; np.max over the colour axis is ten times slower.
    mx = cv2.max(cv2.max(bgr[:, :, 0], bgr[:, :, 1]), bgr[:, :, 2]).astype(np.float32) + 1.0
    if candidates.sum() < 200:
        return np.ones(3, np.float32)
    sel = candidates & (mx > np.percentile(mx[candidates], 50)) & (mx < 250)
    if sel.sum() < 100:
        return np.ones(3, np.float32)
    mean = np.median(bgr[sel].astype(np.float32) + 1.0, axis=0)
    gains = mean.mean() / np.maximum(mean, 1.0)
    return np.clip(gains, 0.75, 1.33).astype(np.float32)


def balanced_hue(lab: Sequence[float], gains: np.ndarray) -> float:
    """OpenCV hue (0..180) of a CIELAB colour (sRGB, D65, as skimage reads photos) after BGR `gains`."""
    rgb = color.lab2rgb(np.asarray(lab, np.float64).reshape(1, 1, 3))
    bgr = np.clip(rgb[:, :, ::-1] * np.asarray(gains, np.float64), 0, 1).astype(np.float32)
    return float(cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)[0, 0, 0]) / 2.0  # float HSV hue is 0..360


def glare_spots(grey: np.ndarray, lightness: np.ndarray, size_frac: float = 0.05, max_edge_density: float = 0.01) -> np.ndarray:
    """Parts of the grey mask that are a lamp's reflection on a glossy table, not pieces.

    A reflection washes the table out to white over one big, smooth patch, often touching the
    castle. Pieces are full of edges (outlines, slots, crenellations, shadows) and even a tower's top
    is smaller than `size_frac` of the photo, so glare is what remains of the edge-free grey pixels
    after an opening with a disk that large.
    """
    d = max(5, int(round(size_frac * max(grey.shape))) | 1)
    edges = cv2.Canny(np.clip(lightness, 0, 255).astype(np.uint8), 20, 50).astype(np.float32) / 255.0
    density = cv2.boxFilter(edges, -1, (d, d))
    smooth = (grey & (density < max_edge_density)).astype(np.uint8)
    out = np.zeros(grey.shape, bool)
    pts = cv2.findNonZero(smooth)
    if pts is None:
        return out
    # Opened only around the smooth pixels (a disk's width of margin keeps the result exact): the
    # opening of the whole photo with so large a disk cost more than the rest of the masks.
    x, y, w, h = cv2.boundingRect(pts)
    x0, y0 = max(0, x - d), max(0, y - d)
    x1, y1 = min(grey.shape[1], x + w + d), min(grey.shape[0], y + h + d)
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (d, d))
    out[y0:y1, x0:x1] = cv2.morphologyEx(smooth[y0:y1, x0:x1], cv2.MORPH_OPEN, disk).astype(bool)
    return out


@dataclass
class ColourLayers:
    """What the mask stage knows of every pixel before classifying it."""

    border: np.ndarray  # bool: the photo's border pixels that sample the table
    gains: np.ndarray  # (3,) BGR white-balance gains
    balanced: np.ndarray  # BGR uint8 after white balance
    lab: np.ndarray  # CIELAB (OpenCV 8-bit) of the balanced photo, lightly blurred
    hsv: np.ndarray  # HSV of the balanced photo
    table_like: np.ndarray  # 0..1: how common the pixel's Lab is on the table
    table_like_colour: np.ndarray  # 0..1: how common its chromaticity is on the table

    @cached_property
    def features(self) -> np.ndarray:
        """The pixel models' features (learned_features), computed once however many models read them."""
        return learned_features(self)[0]

    @cached_property
    def each_model(self) -> dict[Path, np.ndarray]:
        """Each pixel model file's probabilities on `features`, filled as readings ask for them."""
        return {}


def colour_layers(bgr: np.ndarray, *, chroma_grey: float = 16.0, table_thr: float = 0.08) -> ColourLayers:
    """Sample the table on the photo's border, white-balance on the grey plastic, and say per pixel
    how table-like it is."""
    lab0 = cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB)
    border = _border(lab0.shape[:2])
    # Beyond the table's edge the frame may show the room (usually much darker): sample only border
    # pixels of about the table's lightness, so the room does not count as "table".
    Lb = lab0[:, :, 0].astype(np.float32)
    med = float(np.median(Lb[border]))
    border &= np.abs(Lb - med) < 0.35 * med + 20
    t_like = table_likelihood(lab0, border)
    # White balance from pixels that are not table and not strongly coloured (the plastic).
    chroma0 = np.hypot(lab0[:, :, 1].astype(np.float32) - 128, lab0[:, :, 2].astype(np.float32) - 128)
    cand = (t_like < table_thr) & (chroma0 < 3 * chroma_grey) & (lab0[:, :, 0] > 60)
    gains = white_balance_gains(bgr, cand)
    bal = np.clip(bgr.astype(np.float32) * gains, 0, 255).astype(np.uint8)
    lab = cv2.cvtColor(cv2.GaussianBlur(bal, (3, 3), 0), cv2.COLOR_BGR2LAB)
    return ColourLayers(border, gains, bal, lab, cv2.cvtColor(bal, cv2.COLOR_BGR2HSV), table_likelihood(lab, border),
                        table_chromaticity_likelihood(bal, border))


def learned_features(layers: ColourLayers) -> tuple[np.ndarray, float]:
    """The pixel model's features on the photo downscaled to FEATURE_SIDE, and that downscale."""
    h, w = layers.lab.shape[:2]
    s = min(1.0, FEATURE_SIDE / max(h, w))
    size = (max(1, round(w * s)), max(1, round(h * s)))
    small = lambda x: cv2.resize(x, size, interpolation=cv2.INTER_AREA)  # noqa: E731
    border = cv2.resize(layers.border.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST).astype(bool)
    return pixel_features(small(layers.lab), small(layers.hsv), small(layers.table_like.astype(np.float32)),
                          small(layers.table_like_colour.astype(np.float32)), border), s


def learned_probabilities(layers: ColourLayers, pixels: PixelModels | None = None) -> np.ndarray:
    """(H, W, 3) probabilities of other / grey / keep at the photo's working size, by the `pixels`
    models (vision.pixels.READINGS[0] by default)."""
    probs = class_probabilities(layers.features, pixels, each_model=layers.each_model)
    h, w = layers.lab.shape[:2]
    return cv2.resize(probs, (w, h), interpolation=cv2.INTER_LINEAR)


def printed_mat(lightness: np.ndarray, paper: str, mat_to_image: np.ndarray, *, px_per_mm: float = 2.0,
                tolerance: float = 0.3, misregistration: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Which pixels show the calibration mat as printed, and which cannot be told from it.

    The mat's sheet is drawn (calibration.mat.mat_image) and warped into the photo by its detected
    homography; a pixel shows the mat when its lightness lies within `tolerance` (of the paper-to-ink
    contrast) of what the sheet predicts there, allowing `misregistration` pixels of error in the
    warp. Pieces standing on the mat, and their shadows, do not match. Along the print's edges the
    prediction spans ink to paper and nothing in between can be told apart: those pixels are the
    second mask, and so is a thin rim around the sheet. The paper's and the ink's lightness are
    measured in the photo, smoothly across the sheet (a lamp lights one end more)."""
    from calibration.mat import mat_image

    h, w = lightness.shape
    sheet, _ = mat_image(paper, px_per_mm)
    # Sheet pixel (u, v) covers mat mm [u / p, (u + 1) / p): its centre is at (u + 0.5) / p.
    sheet_to_mm = np.array([[1 / px_per_mm, 0, 0.5 / px_per_mm], [0, 1 / px_per_mm, 0.5 / px_per_mm], [0, 0, 1.0]])
    H = np.asarray(mat_to_image, np.float64) @ sheet_to_mm
    expected = cv2.warpPerspective(sheet.astype(np.float32) / 255.0, H, (w, h), flags=cv2.INTER_LINEAR,
                                   borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    on_sheet = cv2.warpPerspective(np.ones(sheet.shape, np.uint8), H, (w, h), flags=cv2.INTER_NEAREST) > 0
    k = np.ones((2 * misregistration + 1,) * 2, np.uint8)
    lo, hi = cv2.erode(expected, k), cv2.dilate(expected, k)
    L = lightness.astype(np.float32)
    paper_px, ink_px = on_sheet & (lo > 0.9), on_sheet & (hi < 0.1)
    if paper_px.sum() < 50 or ink_px.sum() < 50:
        return on_sheet, np.zeros_like(on_sheet)

    def level(where: np.ndarray, pct: float) -> np.ndarray:
        # Smooth map of the lightness the paper (or ink) shows, from the pixels that look like it.
        typical = float(np.percentile(L[where], pct))
        near = where & (np.abs(L - typical) < 0.35 * max(typical, 20.0))
        size = (max(3, w // 8) | 1, max(3, h // 8) | 1)
        num = cv2.blur(np.where(near, L, 0.0).astype(np.float32), size)
        den = cv2.blur(near.astype(np.float32), size)
        return np.where(den > 0.02, num / np.maximum(den, 1e-6), typical).astype(np.float32)

    white, ink = level(paper_px, 75), level(ink_px, 25)
    contrast = np.maximum(white - ink, 10.0)
    below = (ink + contrast * lo) - L
    above = L - (ink + contrast * hi)
    deviation = np.maximum(np.maximum(below, above), 0.0) / contrast
    matches = on_sheet & (deviation < tolerance)
    # Just beyond the sheet's edge the warp may put paper or table: neither is plastic, nor sure to be not.
    rim = cv2.dilate(on_sheet.astype(np.uint8), np.ones((2 * misregistration + 3,) * 2, np.uint8)).astype(bool) & ~on_sheet
    return matches | rim, (matches & (hi - lo > 0.5)) | rim


def compute_masks(bgr: np.ndarray, *, chroma_grey: float = 16.0, chroma_keep: float = 22.0, table_thr: float = 0.08,
                  hue_centres: Mapping[str, float] = HUE_CENTRES,
                  keep_lab: Mapping[str, Sequence[float]] | None = None, learned: bool = True,
                  pixels: PixelModels | None = None, layers: ColourLayers | None = None) -> Masks:
    """The masks of one photo.

    `hue_centres` (OpenCV hue 0..180 after white balance, one per KEEP_COLOURS name) label keep pixels
    by the nearest centre. `keep_lab` are keep colours as photographed under this light (CIELAB, from
    a colour profile): each named colour's centre becomes its hue after this photo's white balance,
    so a calibration photo and this one need not share the camera's white balance. With `learned` the
    grey and keep pixels are the pixel models' (`pixels`, by default vision.pixels.READINGS[0]),
    otherwise the colour rules'. `layers`, when given, are this photo's colour_layers with the same
    `chroma_grey` and `table_thr` (so that several readings of one photo compute them once).
    """
    missing = [c for c in KEEP_COLOURS if c not in hue_centres]
    if missing:
        raise ValueError(f"hue_centres has no hue for {', '.join(missing)} (needs one per keep colour: {', '.join(KEEP_COLOURS)})")
    if layers is None:
        layers = colour_layers(bgr, chroma_grey=chroma_grey, table_thr=table_thr)
    border, gains, bal, lab, hsv = layers.border, layers.gains, layers.balanced, layers.lab, layers.hsv
    t_like_bal, t_like_colour = layers.table_like, layers.table_like_colour
    centres = dict(hue_centres)
    for name, lab_ref in (keep_lab or {}).items():
        centres[name] = balanced_hue(lab_ref, gains)
    centres = [centres[c] for c in KEEP_COLOURS]  # label li is KEEP_COLOURS[li - 1]
    L = lab[:, :, 0].astype(np.float32)
    a, b = lab[:, :, 1].astype(np.float32) - 128, lab[:, :, 2].astype(np.float32) - 128
    chroma = np.hypot(a, b)
    # Chroma of a dark pixel is unreliable (noise, and Lab chroma shrinks towards black).
    neutral = chroma < chroma_grey * np.clip(L / 120.0, 0.5, 1.0)
    hue = hsv[:, :, 0].astype(np.float32)
    if learned:
        probs = learned_probabilities(layers, pixels)
        grey = probs[:, :, 1] > 0.5
        keep = probs[:, :, 2] > 0.5
    else:
        grey = neutral & (t_like_bal < table_thr) & (L > 30)
        # A keep's colour is unlike the table's in any light; a shadow on a coloured cloth keeps its colour.
        keep = (chroma > chroma_keep) & (hsv[:, :, 1] > 55) & (hsv[:, :, 2] > 25) & (t_like_bal < 2 * table_thr) \
            & (t_like_colour < 0.3)
    grey = cv2.morphologyEx(grey.astype(np.uint8), cv2.MORPH_OPEN, np.ones((2, 2), np.uint8)).astype(bool)
    glare = glare_spots(grey, L)
    grey &= ~glare
    label = np.zeros(hue.shape, np.uint8)
    if keep.any():
        h = hue[keep]  # only keep pixels get a colour (a few % of the photo)
        d = np.stack([np.minimum(np.abs(h - c), 180 - np.abs(h - c)) for c in centres])
        label[keep] = np.argmin(d, axis=0) + 1
        # On a cloth of a keep colour (green felt, blue gingham) the cloth's shadows have that hue too;
        # a keep of that colour must then be clearly brighter than the lit cloth, or clearly more
        # saturated than nearly all of it (a red keep on terracotta or cherry wood), to count. (The
        # pixel model learned this from renders on such cloths; only the colour rules need it spelt out.)
        sat_border = border & (hsv[:, :, 1] > 60)
        if not learned and sat_border.mean() > 0.5 * border.mean():
            t_hue = float(np.median(hue[sat_border]))
            t_val = float(np.median(hsv[:, :, 2][sat_border]))
            dists = [min(abs(t_hue - c), 180 - abs(t_hue - c)) for c in centres]
            li = int(np.argmin(dists)) + 1
            if dists[li - 1] < 15:
                # Judge whole blobs by their brightest part, so a keep keeps its shaded sides (its
                # height is read from its full silhouette).
                n, lab_k = cv2.connectedComponents((label == li).astype(np.uint8))
                if n > 1:
                    order = np.argsort(lab_k.ravel(), kind="stable")
                    splits = np.cumsum(np.bincount(lab_k.ravel(), minlength=n))[:-1]
                    bright, vivid = np.zeros(n), np.zeros(n)
                    for out, channel in ((bright, 2), (vivid, 1)):
                        values = hsv[:, :, channel].ravel().astype(np.float32)[order]
                        for comp, chunk in enumerate(np.split(values, splits)):
                            if comp and len(chunk):
                                out[comp] = np.percentile(chunk, 90)
                    t_sat = float(np.percentile(hsv[:, :, 1][sat_border], 97))
                    label[(lab_k > 0) & (bright[lab_k] < 1.1 * t_val) & (vivid[lab_k] < t_sat + 40)] = 0
    # Contrast: how many neutral non-border pixels look like the table (a grey table hides grey pieces).
    inner_neutral = neutral & ~border & (L > 30)
    contrast = 1.0 - float(np.mean(t_like_bal[inner_neutral] >= table_thr)) if inner_neutral.any() else 0.0
    # On a neutral table a shadow is dark, neutral and unlike the lit table: just like a piece's shaded
    # side. Such pixels count only weakly as piece evidence.
    border_chroma = float(np.median(chroma[border]))
    table_L = float(np.median(L[border]))
    soft = grey.astype(np.float32)
    if learned:  # the model's probability is the evidence
        soft = np.where(glare, 0.0, probs[:, :, 1]).astype(np.float32)
    elif border_chroma < chroma_grey:
        soft[grey & (L < 0.8 * table_L)] = 1.0  # (weighting these lower lost dark pieces on white tables)
    return Masks(bal, gains, grey, keep, label, t_like_bal, soft, float(np.percentile(hsv[:, :, 2], 99)), contrast)
