"""Tiny renders (160x120, few samples): the ground truth must say where every piece is in the photo."""
import json

import cv2
import numpy as np
import pytest

from scoring import parse_castle
from scoring.generate import random_finished_castle
from synth.render import render_jpeg, render_photo, save_photo

W, H, SPP = 160, 120, 4
# OpenCV hue (0..180) of each keep colour.
HUE = {"red": 0, "yellow": 27, "green": 62, "blue": 112}


def hue_distance(a: float, b: float) -> float:
    d = abs(a - b) % 180
    return min(d, 180 - d)


def keep_colour_of(hue: float) -> str:
    """The keep colour whose hue is nearest: what a reader of the photo would call it."""
    return min(HUE, key=lambda c: hue_distance(hue, HUE[c]))


def pixel_hsv(photo: np.ndarray, uv, r: int = 1) -> np.ndarray:
    """Median HSV of the (2r+1)^2 pixels around uv (OpenCV scale: H 0..180, S and V 0..255)."""
    u, v = int(round(uv[0])), int(round(uv[1]))
    patch = photo[max(0, v - r): v + r + 1, max(0, u - r): u + r + 1]
    hsv = cv2.cvtColor(patch, cv2.COLOR_BGR2HSV).reshape(-1, 3).astype(float)
    return np.median(hsv, axis=0)


@pytest.fixture(scope="module")
def top_down(small_castle, plain):
    return render_photo(small_castle, 3, W, H, SPP, dict(plain, elevation_deg=90.0, table_kind="painted"),
                        return_labels=True)


@pytest.fixture(scope="module")
def oblique(small_castle, plain):
    return [render_photo(small_castle, seed, W, H, SPP, dict(plain, elevation_deg=45.0), return_labels=True)
            for seed in (5, 6)]


def test_photo_has_the_requested_size_and_ground_truth_keys(top_down):
    photo, truth, labels = top_down
    assert photo.shape == (H, W, 3) and photo.dtype == np.uint8
    assert labels.shape == (H, W)
    for key in ("castle", "camera", "lattice_to_table", "pieces", "conditions", "seed"):
        assert key in truth
    cam = truth["camera"]
    assert (cam["width"], cam["height"]) == (W, H)
    assert np.asarray(cam["K"]).shape == (3, 3) and np.asarray(cam["R"]).shape == (3, 3)


def test_ground_truth_castle_is_the_castle_rendered(small_castle, top_down):
    _, truth, _ = top_down
    assert parse_castle(truth["castle"]) == parse_castle(small_castle)
    kinds = [p["kind"] for p in truth["pieces"]]
    assert kinds.count("tower") == 9 and kinds.count("short_wall") == 12 and kinds.count("keep") == 4


def test_keeps_project_onto_pixels_of_their_colour_from_above(top_down):
    photo, truth, _ = top_down
    for piece in (p for p in truth["pieces"] if p["kind"] == "keep"):
        h, s, _ = pixel_hsv(photo, piece["top_px"])
        assert s > 60, f"{piece['colour']} keep: pixel at its projection is not saturated (S={s})"
        assert keep_colour_of(h) == piece["colour"], f"{piece['colour']} keep seen with hue {h}"


def test_towers_and_walls_project_onto_grey_pieces_from_above(top_down):
    photo, truth, labels = top_down
    for piece in truth["pieces"]:
        if piece["kind"] not in ("tower", "short_wall"):
            continue
        u, v = (int(round(c)) for c in piece["top_px"])
        assert labels[v, u] == piece["mask_id"], f"{piece['id']} is not where the ground truth puts it"
        _, s, _ = pixel_hsv(photo, piece["top_px"], r=0)
        assert s < 80, f"{piece['id']}: grey plastic expected at its projection (S={s})"


def test_oblique_views_put_each_visible_keep_on_its_colour(oblique):
    checked = 0
    for photo, truth, labels in oblique:
        assert truth["camera"]["elevation_deg"] == pytest.approx(45.0)
        for piece in (p for p in truth["pieces"] if p["kind"] == "keep"):
            u, v = (int(round(c)) for c in piece["top_px"])
            if labels[v, u] != piece["mask_id"]:  # its top is hidden behind a wall from this side
                continue
            h, s, _ = pixel_hsv(photo, piece["top_px"], r=0)
            assert s > 60 and keep_colour_of(h) == piece["colour"], (piece["colour"], h, s)
            checked += 1
    assert checked >= 4  # at least half of the keeps show their tops


def test_every_piece_pixel_lies_inside_its_ground_truth_box(oblique):
    for _, truth, labels in oblique:
        for piece in truth["pieces"]:
            vs, us = np.nonzero(labels == piece["mask_id"])
            if len(us) == 0:
                continue
            x0, y0, x1, y1 = piece["bbox_px"]
            assert us.min() >= x0 - 1 and us.max() <= x1 + 1 and vs.min() >= y0 - 1 and vs.max() <= y1 + 1, piece["id"]


def test_lattice_homography_maps_tower_positions_to_their_footprints(oblique):
    _, truth, _ = oblique[0]
    Hm = np.asarray(truth["lattice_to_image"])
    for piece in (p for p in truth["pieces"] if p["kind"] == "tower"):
        x, y = piece["lattice"]
        p = Hm @ [x, y, 1.0]
        centre = np.mean(piece["footprint_px"], axis=0)
        # Pieces are placed by hand: a fraction of a millimetre off the exact lattice point.
        assert np.hypot(*(p[:2] / p[2] - centre)) < 1.0


def test_same_seed_renders_the_same_scene(small_castle, plain, top_down):
    _, truth, _ = top_down
    _, again = render_photo(small_castle, 3, W, H, SPP, dict(plain, elevation_deg=90.0, table_kind="painted"))
    assert again["camera"] == truth["camera"]
    assert again["conditions"] == truth["conditions"]


def test_save_writes_photo_truth_and_mask(tmp_path, top_down):
    photo, truth, labels = top_down
    path = save_photo(tmp_path / "photo_001.jpg", photo, truth, labels)
    written = cv2.imread(str(path))
    assert written.shape == photo.shape
    saved = json.loads(path.with_suffix(".json").read_text())
    assert saved["image"] == "photo_001.jpg" and saved["castle"] == truth["castle"]
    mask = cv2.imread(str(tmp_path / "photo_001_mask.png"), cv2.IMREAD_UNCHANGED)
    assert mask.dtype == np.uint16 and np.array_equal(mask, labels)


def test_ground_truth_is_plain_json(top_down):
    _, truth, _ = top_down
    assert json.loads(json.dumps(truth)) == truth


def test_save_writes_the_rendered_jpeg_bytes_unchanged(tmp_path, small_castle, plain):
    jpeg, truth, labels = render_jpeg(small_castle, 8, W, H, 2, plain)
    path = save_photo(tmp_path / "shot.jpg", jpeg, truth, labels)
    assert path.read_bytes() == jpeg
    assert truth["conditions"]["jpeg_quality"] == plain["jpeg_quality"]


def test_save_refuses_a_name_that_is_not_jpeg(tmp_path, top_down):
    photo, truth, _ = top_down
    with pytest.raises(ValueError, match="JPEG"):
        save_photo(tmp_path / "photo.png", photo, truth)


def test_bad_castle_is_refused_with_the_entry_named(plain):
    with pytest.raises(ValueError, match="walls"):
        render_photo({"format": "castellan/1", "towers": [[0, 0]], "walls": [{"from": [0, 0], "to": [3, 0]}]},
                     0, W, H, SPP, plain)


def test_bad_size_is_refused(small_castle):
    with pytest.raises(ValueError, match="size"):
        render_photo(small_castle, 0, 4, 4, SPP)


def test_lamps_stay_out_of_the_frame_and_the_photo_is_exposed(plain):
    # A big castle seen from high up, with a lamp and a ceiling panel overhead: with these seeds the
    # drawn lamp positions would stand inside the frame.
    castle = random_finished_castle(502, ["red", "blue", "yellow", "green"])
    for seed in (0, 6, 7):
        photo, truth = render_photo(castle, seed, W, H, 1,
                                    dict(plain, elevation_deg=60.0, light_kinds=["lamp", "ceiling"]))
        cam = truth["camera"]
        K, R, t = (np.asarray(cam[k]) for k in ("K", "R", "t"))
        for light in truth["conditions"]["lights"]:
            e, a = np.radians(light["elevation_deg"]), np.radians(light["azimuth_deg"])
            pos = np.asarray(truth["castle_centre_mm"]) + light["distance_mm"] * np.array(
                [np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
            x = R @ pos + t
            u, v = (K @ x)[:2] / x[2]
            assert x[2] <= 0 or not (0 <= u < W and 0 <= v < H), (seed, light["kind"], u, v)
        assert 40 < photo.mean() < 220


def test_stone_relief_sets_how_much_moulded_stone_the_grey_plastic_shows(plain):
    # Training renders vary the relief so the pixel model also learns plastic without texture.
    from types import SimpleNamespace

    from synth.backend import load_mitsuba
    from synth.conditions import draw_conditions
    from synth.render import _materials

    mi, _ = load_mitsuba()

    def grey_plastic(relief: float) -> tuple[float, float]:
        cond = draw_conditions(7, dict(plain, stone_relief=relief))
        grey = _materials(mi, SimpleNamespace(items=[]), cond, np.random.default_rng(7))["grey"]
        albedo = np.array(grey["bsdf"]["diffuse_reflectance"]["bitmap"])
        return grey["scale"], float(albedo.std() / albedo.mean())

    bump, spread = grey_plastic(1.0)
    assert bump > 0 and spread > 0.03
    assert grey_plastic(0.0) == (0.0, pytest.approx(0.0, abs=0.02))
    half_bump, half_spread = grey_plastic(0.5)
    assert half_bump == pytest.approx(bump / 2) and half_spread == pytest.approx(spread / 2, rel=0.1)
