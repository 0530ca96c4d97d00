"""Where the castle lies in the photo: the cluster of grey plastic that is the castle (not a game box or a
card beside it), its outline, and the calibration mat's sheet beside or under it."""
from __future__ import annotations

import cv2
import numpy as np


def castle_region(grey: np.ndarray) -> np.ndarray:
    """The cluster of grey pixels that is the castle, dilated a little; clutter elsewhere drops out.

    Grey pixels within 2 % of the photo's side are joined into clusters. The castle is the cluster
    with the most *thin* grey pixels (those a square twice that size cannot cover: walls and towers),
    not the biggest: a game box or a card beside the castle can be as grey and as big, but is solid."""
    h, w = grey.shape
    k = max(3, int(round(0.02 * max(h, w))))
    grey8 = grey.astype(np.uint8)
    closed = cv2.morphologyEx(grey8, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    n, lab = cv2.connectedComponents(closed)
    if n <= 1:
        return np.zeros_like(grey)
    # (A square, not a disk: as telling, and some twenty times faster.)
    thin = grey & ~cv2.morphologyEx(grey8, cv2.MORPH_OPEN, np.ones((2 * k + 1, 2 * k + 1), np.uint8)).astype(bool)
    by_cluster = np.bincount(lab[thin] if thin.any() else lab[grey], minlength=n)  # all solid: the biggest
    by_cluster[0] = 0
    castle = int(np.argmax(by_cluster))
    return cv2.dilate((lab == castle).astype(np.uint8), np.ones((k, k), np.uint8)).astype(bool)


def castle_hull(region: np.ndarray) -> np.ndarray:
    """The convex hull of the castle region: where keeps can claim courtyards."""
    # The hull of the outlines' pixels is the hull of all pixels, and there are far fewer of them.
    contours, _ = cv2.findContours(region.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    out = np.zeros(region.shape, np.uint8)
    if contours:
        cv2.fillConvexPoly(out, cv2.convexHull(np.concatenate(contours)), 1)
    return out.astype(bool)


def mat_sheet(mat_corners: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The calibration mat's sheet in the photo (bool, `shape`), from its four corners."""
    sheet = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(sheet, np.round(np.asarray(mat_corners)).astype(np.int32), 1)
    return sheet.astype(bool)


def share_of_mat_under_castle(mat_corners: np.ndarray, region: np.ndarray) -> float:
    """The share of the calibration mat's sheet (its four corners in the photo) that the castle's outline
    (castle_hull of the castle region) covers: 0 for a mat beside the castle."""
    sheet = mat_sheet(mat_corners, region.shape)
    return float((sheet & castle_hull(region)).sum() / max(1, sheet.sum()))
