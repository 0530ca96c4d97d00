"""synth.flat: the flat-shaded renderer's per-pixel labels, which the pixel network trains on."""
from __future__ import annotations

import cv2
import numpy as np

from synth.flat import random_scene, render
from tests.vision.toyscene import SMALL_CASTLE


def test_labels_say_what_each_pixel_shows():
    img, labels = render(SMALL_CASTLE, elevation=60, azimuth=30, size=(320, 240), distance=500, seed=1,
                         with_labels=True)
    assert (render(SMALL_CASTLE, elevation=60, azimuth=30, size=(320, 240), distance=500, seed=1) == img).all()
    inner = cv2.erode((labels == 1).astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    keep = cv2.erode((labels == 2).astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
    assert inner.sum() > 500 and keep.sum() > 30
    assert np.median(hsv[:, :, 1][inner]) < 30  # grey plastic is neutral
    assert np.median(hsv[:, :, 1][keep]) > 100  # keeps are coloured
    table = labels == 0
    assert abs(np.median(img[table].astype(float), axis=0) - np.array((60, 100, 150))).max() < 10


def test_random_scenes_differ_and_show_both_kinds_of_piece():
    rng = np.random.default_rng(0)
    (a, la), (b, lb) = random_scene(rng), random_scene(rng)
    assert a.shape == (480, 640, 3) and la.shape == (480, 640)
    assert not np.array_equal(a, b)
    for labels in (la, lb):
        assert (labels == 1).sum() > 1000 and (labels == 2).any() and (labels == 0).mean() > 0.3
