"""The candidate pieces' silhouettes: the convex hull of a box's projected corners, drawn pixel by pixel."""
from __future__ import annotations

import cv2
import numpy as np
import shapely
from shapely.geometry import MultiPoint

from vision.silhouette_kernel import silhouette_pixels, union_weight

SHAPE = (60, 80)  # h, w


def _random_boxes(n: int, seed: int) -> np.ndarray:
    """(n, 8, 2) corner sets like a leaning box's: a footprint quad and a shifted, scaled top quad."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, 8, 2))
    for k in range(n):
        centre = rng.uniform([-10, -10], [SHAPE[1] + 10, SHAPE[0] + 10])
        half = rng.uniform(0.3, 12, 2)
        angle = rng.uniform(0, np.pi)
        rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        quad = (np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * half) @ rot.T
        lean = rng.normal(0, 6, 2)
        top = quad * rng.uniform(0.9, 1.1) + lean
        out[k] = np.vstack([quad, top]) + centre
    return out


def test_a_silhouette_is_the_convex_hull_of_the_corners_to_a_pixel():
    boxes = _random_boxes(150, seed=1)
    pixels, starts = silhouette_pixels(boxes, SHAPE[1], SHAPE[0], np.zeros(len(boxes), bool))
    ys, xs = np.mgrid[:SHAPE[0], :SHAPE[1]]
    xs, ys = xs.ravel().astype(float), ys.ravel().astype(float)
    for k, corners in enumerate(boxes):
        hull = MultiPoint([tuple(p) for p in corners]).convex_hull
        got = np.zeros(SHAPE[0] * SHAPE[1], bool)
        got[pixels[starts[k]:starts[k + 1]]] = True
        inside = shapely.contains_xy(hull, xs, ys)
        out = shapely.distance(hull, shapely.points(xs, ys))
        assert got[inside].all(), k  # a pixel whose centre is inside is always covered
        assert not got[out > 0.75].any(), k  # clearly outside (a corner pixel lies up to 0.71 out): never


def test_silhouettes_agree_with_opencvs_polygon_fill_but_for_boundary_pixels():
    boxes = _random_boxes(200, seed=2)
    pixels, starts = silhouette_pixels(boxes, SHAPE[1], SHAPE[0], np.zeros(len(boxes), bool))
    differ = total = 0
    for k, corners in enumerate(boxes):
        canvas = np.zeros(SHAPE, np.uint8)
        fixed = np.round(corners * 4).astype(np.int32)
        cv2.fillConvexPoly(canvas, cv2.convexHull(fixed), 1, lineType=cv2.LINE_8, shift=2)
        ours = np.zeros(SHAPE[0] * SHAPE[1], bool)
        ours[pixels[starts[k]:starts[k + 1]]] = True
        differ += int((ours != canvas.ravel().astype(bool)).sum())
        total += int(canvas.sum())
    assert total > 10000
    assert differ < 0.05 * total


def test_skipped_and_off_image_boxes_have_no_pixels_and_indices_stay_in_the_image():
    boxes = _random_boxes(50, seed=3)
    boxes[7] += 500.0  # wholly off the image
    skip = np.zeros(len(boxes), bool)
    skip[3] = True
    pixels, starts = silhouette_pixels(boxes, SHAPE[1], SHAPE[0], skip)
    assert starts[4] == starts[3] and starts[8] == starts[7]
    assert pixels.min() >= 0 and pixels.max() < SHAPE[0] * SHAPE[1]
    assert len(pixels) == starts[-1] and np.all(np.diff(starts) >= 0)


def test_union_weight_counts_each_covered_pixel_once():
    boxes = _random_boxes(40, seed=4)
    weight = np.random.default_rng(5).uniform(-1, 1, SHAPE[0] * SHAPE[1]).astype(np.float32)
    pixels, _ = silhouette_pixels(boxes, SHAPE[1], SHAPE[0], np.zeros(len(boxes), bool))
    union = np.unique(pixels)
    assert len(union) < len(pixels)  # the boxes overlap, so a naive sum would count pixels twice
    assert np.isclose(union_weight(boxes, weight, SHAPE[1], SHAPE[0]), weight[union].sum(), rtol=1e-5)
    assert union_weight(boxes[:0], weight, SHAPE[1], SHAPE[0]) == 0.0
