"""Render the photo `castellan calibrate pieces` expects: loose pieces standing apart on the mat.

    jpeg, truth = render_calibration_jpeg(seed=3, width=1280, height=960, spp=8)

One tower, one short wall, one long wall and one keep of each colour stand on the printed mat at
random turns, photographed from 55 to 85 degrees up with the whole mat in view. The set is drawn as a
real set can be (pieces-and-photos.md): its size 0.85..1.15 of the spec's, the tower and the walls'
section each a further 0.93..1.07 of that (the spec's millimetres are estimates), the keeps at their own
scale; but the walls' lengths always obey G3 (rules.md: a short wall spans one lattice step between
tower faces, a long wall two, so long = 2 x short + tower), the one proportion that is certain. The light,
table, keep hues, exposure, noise and JPEG are drawn as for a castle photo (synth.conditions).
`truth["pieces"]` gives every piece's kind, colour and rendered size (length, width, height in mm).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from synth import geometry as g
from synth.backend import load_mitsuba
from synth.camera import fit_camera
from synth.conditions import draw_conditions
from synth.postprocess import develop, encode_jpeg
from synth.render import _build_scene, _render_linear
from synth.scene import KEEP_COLOURS, Item, Layout

# Where the pieces stand on an A4 mat (paper mm from the top-left corner) and their base turn (degrees):
# apart from each other and clear of the sheet's edge.
SPOTS_MM = ((60, 60), (150, 70), (100, 140), (50, 222), (92, 232), (140, 215), (172, 160))
BASE_TURN_DEG = (30, 120, 35, 20, 60, 110, 150)
KINDS = ("tower", "short_wall", "long_wall") + ("keep",) * len(KEEP_COLOURS)
MAT_THICKNESS_MM = 0.15


# Version of the scene drawn here: benchmarks cache renders by seed and must not mix versions
# (1: each kind at its own scale, so sets broke G3; 2: sets obey G3).
SCENE_VERSION = 2


def _set_scales(rng: np.random.Generator) -> dict[str, float]:
    """Scales of one set: its lattice pitch (the set's size), the tower and the walls' section
    (thickness, height, merlons, tabs) near it, the keeps on their own."""
    pitch, tower, wall, keep = (float(v) for v in rng.uniform([0.85, 0.93, 0.93, 0.85], [1.15, 1.07, 1.07, 1.15]))
    return {"pitch": pitch, "tower": pitch * tower, "wall": pitch * wall, "keep": keep}


def _mesh(kind: str, scales: dict[str, float]) -> tuple[g.Mesh, tuple[float, float, float]]:
    if kind == "tower":
        s = scales["tower"]
        return g.tower(s), (g.TOWER_SIDE * s, g.TOWER_SIDE * s, g.TOWER_HEIGHT * s)
    if kind == "keep":
        s = scales["keep"]
        return g.keep(s), (g.KEEP_SIDE * s, g.KEEP_SIDE * s, g.KEEP_HEIGHT * s)
    # G3: from tower face to tower face, one or two lattice steps less a tower.
    steps = 1 if kind == "short_wall" else 2
    length = steps * g.PITCH * scales["pitch"] - g.TOWER_SIDE * scales["tower"]
    s = scales["wall"]
    return g.wall(length, s), (length, g.WALL_THICK * s, g.WALL_HEIGHT * s)


def calibration_layout(rng: np.random.Generator, paper: str = "a4", mat_yaw_deg: float | None = None) -> Layout:
    """The mat (at `mat_yaw_deg`, or a random turn) with the seven pieces standing on it (world mm,
    table z = 0)."""
    from calibration.mat import mat_layout

    w, h = mat_layout(paper).paper_mm
    yaw = float(rng.uniform(0, 360)) if mat_yaw_deg is None else mat_yaw_deg
    mat_pose = g.pose(0.0, 0.0, yaw, 0.0)
    items = [Item("mat", "mat", "mat", g.top_uv_slab(w, h, MAT_THICKNESS_MM).transformed(mat_pose),
                  (w, h, MAT_THICKNESS_MM), mat_pose, {"paper": paper}, clutter=True)]

    def on_mat(x: float, y: float) -> np.ndarray:
        return (np.array([x - w / 2, h / 2 - y, MAT_THICKNESS_MM, 1.0]) @ mat_pose.T)[:3]

    mat_yaw = float(np.degrees(np.arctan2(mat_pose[1, 0], mat_pose[0, 0])))
    scales = _set_scales(rng)
    # The A4 spots scaled to the sheet, so letter and A3 work too.
    sx, sy = w / 210.0, h / 297.0
    for i, (kind, (x, y), turn) in enumerate(zip(KINDS, SPOTS_MM, BASE_TURN_DEG)):
        mesh, size = _mesh(kind, scales)
        centre = on_mat(x * sx, y * sy)
        pose = g.pose(float(centre[0]), float(centre[1]), mat_yaw + turn + float(rng.uniform(-15, 15)), MAT_THICKNESS_MM)
        info: dict[str, Any] = {}
        material = "grey"
        if kind == "keep":
            colour = KEEP_COLOURS[i - 3]
            material, info = f"keep-{colour}", {"colour": colour, "double": False}
        items.append(Item(f"{kind}-{i}", kind, material, mesh.transformed(pose), size, pose, info))
    corners = np.vstack([it.box_corners() for it in items])
    centre = np.array([0.0, 0.0, 0.0])
    size = float(max(np.ptp(corners[:, 0]), np.ptp(corners[:, 1])))
    corners_world = [on_mat(*c)[:2].tolist() for c in ((0, 0), (w, 0), (w, h), (0, h))]
    return Layout(items, np.zeros(2), g.PITCH, corners, centre, size,
                  {"paper": paper, "size_mm": [w, h], "corners_world_mm": corners_world})


def render_calibration_jpeg(seed: int = 0, width: int = 1280, height: int = 960, spp: int = 8,
                            paper: str = "a4", even_light: bool = True, view: int = 0) -> tuple[bytes, dict[str, Any]]:
    """Render one calibration photo; returns the JPEG bytes and the ground truth (camera, pieces).

    With `even_light` (what `castellan calibrate pieces` asks for) the light is a window and/or a
    ceiling panel and the photo is framed on the mat (its long side along the frame's); otherwise the
    lights (sun and lamps too) and the mat's turn are drawn as for any castle photo.
    `view` 1, 2, ... photographs the same scene (set, light, table) again from another place, as a user
    taking several photos of one set walks round the mat: a new elevation and framing margin, and in
    even light the mat seen from its other long side on odd views (any azimuth in any light).
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng([int(seed), 0xCA1B])
    overrides: dict[str, Any] = {"elevation_deg": float(rng.uniform(55, 85)), "margin": float(rng.uniform(0.04, 0.1)),
                                 "spare_keeps": 0, "cards": 0, "game_box": False, "mat": True,
                                 "mat_paper": paper, "target_offset": (0.0, 0.0),
                                 # The measured sets so far (and the cached renders) show the full relief.
                                 "stone_relief": 1.0}
    if even_light:
        overrides["light_kinds"] = [["ceiling"], ["window"], ["window", "ceiling"]][int(rng.integers(3))]
    cond = draw_conditions(int(seed), overrides)
    # The sheet's long (paper y) side along the image's x axis, give or take the user's hand.
    mat_yaw = cond.azimuth_deg + float(rng.choice([0.0, 180.0]) + rng.uniform(-8, 8)) if even_light else None
    layout = calibration_layout(rng, paper, mat_yaw)
    if view:
        # Drawn apart from `rng`, which goes on to draw the table and the noise: those stay the scene's.
        vrng = np.random.default_rng([int(seed), 0xCA1B, int(view)])
        azimuth = (cond.azimuth_deg + 180.0 * (view % 2) + float(vrng.uniform(-8, 8)) if even_light
                   else float(vrng.uniform(0, 360)))
        cond = replace(cond, elevation_deg=float(vrng.uniform(55, 85)), margin=float(vrng.uniform(0.04, 0.1)),
                       azimuth_deg=azimuth % 360.0)
    mi, variant = load_mitsuba()
    camera = fit_camera(layout.castle_points, layout.castle_centre, width, height, cond.focal_mm, cond.elevation_deg,
                        cond.azimuth_deg, cond.roll_deg, cond.margin)
    scene, table = _build_scene(mi, layout, cond, camera, spp, rng)
    linear = _render_linear(mi, scene, spp, (int(seed) + 7919 * int(view)) % (1 << 31))
    jpeg = encode_jpeg(develop(linear, cond, rng), cond.jpeg_quality)
    pieces = [{"id": it.name, "kind": it.kind, **it.info, "size_mm": [round(v, 3) for v in it.box_size],
               "world_mm": np.round(it.pose[:3, 3], 3).tolist()} for it in layout.items if not it.clutter]
    truth = {"format": "castellan-synth-calibration/1", "scene_version": SCENE_VERSION, "camera": camera.to_json(), "pieces": pieces,
             "mat": layout.mat, "table": table, "conditions": cond.to_json(), "seed": int(seed), "view": int(view),
             "renderer": {"engine": "mitsuba3", "variant": variant, "spp": spp,
                          "total_s": round(time.perf_counter() - t0, 2)}}
    return jpeg, truth
