"""The grey-piece mask: a lamp's reflection on a glossy table is not a piece, a castle's walls are."""
import numpy as np

from vision.masks import glare_spots


def _walls_and_glare(size: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    lightness = np.full((size, size), 90.0) + rng.normal(0, 2, (size, size))  # a dark, slightly noisy table
    walls = np.zeros((size, size), bool)
    for k in range(40, 200, 30):  # a lattice of walls: grey, a few pixels thick, with crenel marks
        walls[k:k + 5, 40:200] = True
        walls[40:200, k:k + 5] = True
    lightness[walls] = 160.0
    lightness[walls & (np.indices(walls.shape).sum(axis=0) % 7 == 0)] = 120.0
    # A reflection fades out softly; where it is bright enough it passes for grey plastic.
    yy, xx = np.indices((size, size))
    spot = 150.0 * np.exp(-((xx - 300) ** 2 + (yy - 300) ** 2) / (2 * 60.0 ** 2))
    lightness = np.where(walls, lightness, lightness + spot)
    glare = (spot > 70.0) & ~walls
    return walls, glare, lightness, walls | glare


def test_a_smooth_bright_reflection_is_glare_and_the_walls_are_not():
    walls, glare, lightness, grey = _walls_and_glare()
    found = glare_spots(grey, lightness)
    assert found[glare].mean() > 0.8
    assert found[walls].mean() < 0.01


def test_glare_touching_the_castle_is_still_told_apart():
    walls, glare, lightness, grey = _walls_and_glare()
    bridge = np.zeros_like(grey)
    bridge[195:205, 195:250] = True  # a wall running into the reflection joins them in one blob
    grey = grey | bridge
    lightness[bridge] = 160.0
    found = glare_spots(grey, lightness)
    assert found[glare].mean() > 0.7
    assert found[walls].mean() < 0.01


def test_a_red_keep_on_a_terracotta_table_is_still_a_keep():
    from vision.masks import KEEP_COLOURS, compute_masks

    rng = np.random.default_rng(1)
    # Terracotta linen (BGR), lit and a little noisy; a red keep, darker than the cloth but far more saturated.
    img = np.clip(np.array([95.0, 120.0, 190.0]) + rng.normal(0, 4, (240, 320, 3)), 0, 255)
    img[100:116, 150:166] = (20, 18, 120)
    img[60:74, 60:74] = (150, 150, 152)  # some grey plastic, the white-balance reference
    masks = compute_masks(img.astype(np.uint8))
    red = KEEP_COLOURS.index("red") + 1
    assert (masks.keep_label[100:116, 150:166] == red).mean() > 0.5
    assert (masks.keep_label[:80, 200:] != 0).mean() < 0.01  # the cloth itself is no keep


def test_pieces_standing_on_the_calibration_mat_are_not_cut_out_with_it():
    """The mat may lie under the castle: only what shows the mat as printed is removed from the masks,
    pieces standing on its paper or its print (and their shadows) are not."""
    import cv2

    from calibration.synthetic import box_corners, look_at, render_mat_view
    from vision.masks import printed_mat
    from vision.plane import pose_from_mat

    K = np.array([[900.0, 0, 480.0], [0, 900.0, 360.0], [0, 0, 1]])
    R, t = look_at((105, 148), 60, 250, 520)
    boxes = [(box_corners(x, y, 22, 22, a), 42, (140, 140, 145)) for x, y, a in ((60, 100, 10), (150, 190, 35), (100, 230, 0))]
    photo = render_mat_view(K, R, t, (960, 720), boxes=boxes, shadow=(55, 30, 0.3))
    pose = pose_from_mat(photo, None)
    assert pose is not None and pose.mat_paper == "a4"
    mat, unsure = printed_mat(cv2.cvtColor(photo, cv2.COLOR_BGR2LAB)[:, :, 0], pose.mat_paper, pose.mat_to_image)

    pieces = np.any([_box_pixels(c, height, K, R, t, photo.shape[:2]) for c, height, _ in boxes], axis=0)
    sheet = _sheet(pose, photo.shape[:2])
    bare = cv2.erode(sheet.astype(np.uint8), np.ones((9, 9), np.uint8)).astype(bool) & ~cv2.dilate(pieces.astype(np.uint8), np.ones((41, 41), np.uint8)).astype(bool)
    cut = mat & ~unsure
    assert np.mean(cut[pieces]) < 0.1  # the pieces stay in the piece masks (where they cover the print's edges, unsure)
    assert np.mean(unsure[pieces]) < 0.6
    assert np.mean(cut[bare]) > 0.5 and np.mean(mat[bare]) > 0.97  # the bare mat is cut (the print's edges left neutral)


def test_a_piece_on_the_mat_is_kept_only_when_it_joins_the_castle_beyond_the_sheet():
    """A mat beside the castle gives nothing to the castle; a mat under it keeps the pieces on it."""
    import cv2

    from calibration.synthetic import box_corners, look_at, render_mat_view
    from vision.masks import Masks
    from vision.pipeline import _mask_out_mat
    from vision.plane import pose_from_mat

    K = np.array([[900.0, 0, 480.0], [0, 900.0, 360.0], [0, 0, 1]])
    R, t = look_at((105, 148), 60, 250, 600)
    # A long wall running off the sheet's left edge onto the table, and a tower alone on the sheet.
    wall, tower = (box_corners(0, 150, 86, 9, 0), 30, (140, 140, 145)), (box_corners(140, 230, 22, 22, 0), 42, (140, 140, 145))
    photo = render_mat_view(K, R, t, (960, 720), boxes=[wall, tower])
    pose = pose_from_mat(photo, None)
    sheet = _sheet(pose, photo.shape[:2])
    wall_px, tower_px = (_box_pixels(c, height, K, R, t, photo.shape[:2]) for c, height, _ in (wall, tower))
    # The pixel model's view: the pieces, and the sheet's white too (it is neutral and unlike the table).
    grey = wall_px | tower_px | (cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY) > 200)
    shape = photo.shape[:2]
    masks = Masks(photo, np.ones(3, np.float32), grey.copy(), np.zeros(shape, bool), np.zeros(shape, np.uint8),
                  np.zeros(shape, np.float32), grey.astype(np.float32), 255.0, 1.0)
    _mask_out_mat(masks, pose)
    wall_on_sheet = wall_px & sheet
    assert wall_on_sheet.sum() > 100 and np.mean(masks.grey[wall_on_sheet]) > 0.6
    assert np.mean(masks.grey[tower_px]) < 0.05
    assert np.mean(masks.grey[sheet & ~wall_px & ~tower_px]) < 0.02


def _box_pixels(corners, height, K, R, t, shape) -> np.ndarray:
    """Where a box standing on the mat shows in the photo, less a rim its blurred outline may share with
    the mat."""
    import cv2

    out = np.zeros(shape, np.uint8)
    pts = np.vstack([np.c_[corners, np.zeros(4)], np.c_[corners, -np.full(4, height)]])
    px, _ = cv2.projectPoints(pts, cv2.Rodrigues(R)[0], t, K, None)
    cv2.fillConvexPoly(out, cv2.convexHull(px.reshape(-1, 2).astype(np.float32)).astype(np.int32), 1)
    return cv2.erode(out, np.ones((5, 5), np.uint8)).astype(bool)


def _sheet(pose, shape) -> np.ndarray:
    """The mat's paper in the photo, as its detected pose places it."""
    import cv2

    out = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(out, np.round(pose.mat_corners).astype(np.int32), 1)
    return out.astype(bool)
