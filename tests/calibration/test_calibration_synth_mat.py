"""The mat as the renderer puts it in a scene (synth, Mitsuba) is found where the ground truth says."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

pytest.importorskip("mitsuba", reason="the renderer is the optional extra: pip install .[synth]")

from calibration.mat import find_mat  # noqa: E402
from synth.render import render_photo  # noqa: E402

CASTLE = {
    "format": "castellan/1",
    "towers": [[0, 0], [1, 0], [0, 1], [1, 1]],
    "walls": [{"from": [0, 0], "to": [1, 0]}, {"from": [0, 1], "to": [1, 1]},
              {"from": [0, 0], "to": [0, 1]}, {"from": [1, 0], "to": [1, 1]}],
    "keeps": [{"colour": "red", "at": [0.5, 0.5]}],
    "players": ["red", "blue"],
}
PLAIN = {"spare_keeps": 0, "cards": 0, "game_box": False, "mat": True, "mat_paper": "a4", "noise": 0.002,
         "blur_px": 0.0, "motion_px": 0.0, "light_kinds": ["ceiling"], "roll_deg": 0.0, "jpeg_quality": 90,
         "elevation_deg": 60.0}


def test_rendered_mat_is_found_at_its_true_place():
    # Seed 9 puts the sheet beside the castle, mostly in the frame.
    photo, truth = render_photo(CASTLE, 9, 640, 480, 2, PLAIN)
    mat = truth["mat"]
    assert mat is not None
    det = find_mat(photo)
    assert det is not None and det.paper == mat["paper"]
    # The renderer's sheet -> image map, from its four corners (the sheet is a plane).
    H_true = cv2.getPerspectiveTransform(np.float32(mat["corners_paper_mm"]), np.float32(mat["corners_px"]))
    lay = det.layout
    (ox, oy), (bw, bh) = lay.board_origin_mm, lay.board_mm
    grid = np.array([[ox + fx * bw, oy + fy * bh] for fx in np.linspace(0, 1, 5) for fy in np.linspace(0, 1, 5)])
    true_px = cv2.perspectiveTransform(grid.reshape(-1, 1, 2), H_true).reshape(-1, 2)
    seen = (true_px[:, 0] >= 0) & (true_px[:, 0] < 640) & (true_px[:, 1] >= 0) & (true_px[:, 1] < 480)
    assert seen.sum() >= 10
    err = np.linalg.norm(det.mat_to_image(grid[seen]) - true_px[seen], axis=1)
    assert err.max() < 2.0, err
