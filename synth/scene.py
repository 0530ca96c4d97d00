"""Lay out a castle and its surroundings on the table: every object's mesh in world millimetres.

The lattice is axis-aligned with the world: lattice point (x, y) stands at table millimetres
origin + pitch * (x, y), z = 0 is the table. The camera's azimuth supplies every rotation of the castle
in the frame. Nothing here knows about the renderer; synth.render turns a Layout into a Mitsuba scene.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from synth import geometry as g
from synth.conditions import Conditions

KEEP_COLOURS = ("red", "blue", "yellow", "green")
# sRGB base colours of the keeps' plastic.
KEEP_SRGB = {
    "red": (0.78, 0.09, 0.08),
    "blue": (0.10, 0.24, 0.70),
    "yellow": (0.95, 0.80, 0.08),
    "green": (0.12, 0.56, 0.20),
}
CARD_MM = (63.0, 88.0, 0.35)
BOX_MM = (295.0, 295.0, 72.0)


@dataclass
class Item:
    """One object in the scene."""

    name: str
    kind: str  # tower, short_wall, long_wall, keep, card, game_box, mat
    material: str  # grey, keep-<colour>, card-<colour>, game_box, mat
    mesh: g.Mesh
    box_size: tuple[float, float, float]  # its bounding box in its own frame (length, width, height)
    pose: np.ndarray  # 4x4 piece frame -> world
    info: dict[str, Any] = field(default_factory=dict)
    clutter: bool = False

    def box_corners(self) -> np.ndarray:
        """The 8 corners of the oriented bounding box in world mm."""
        lx, ly, h = self.box_size
        local = np.array([[x, y, z, 1.0] for x in (-lx / 2, lx / 2) for y in (-ly / 2, ly / 2) for z in (0, h)])
        return (local @ self.pose.T)[:, :3]

    def base_corners(self) -> np.ndarray:
        """The 4 corners of its footprint on the table, counter-clockwise, world mm."""
        lx, ly, _ = self.box_size
        local = np.array([[-lx / 2, -ly / 2, 0, 1], [lx / 2, -ly / 2, 0, 1], [lx / 2, ly / 2, 0, 1],
                          [-lx / 2, ly / 2, 0, 1]])
        return (local @ self.pose.T)[:, :3]


@dataclass
class Layout:
    items: list[Item]
    origin_mm: np.ndarray  # table mm of lattice point (0, 0)
    pitch_mm: float
    castle_points: np.ndarray  # world points that must be in the frame
    castle_centre: np.ndarray
    castle_size_mm: float
    mat: dict[str, Any] | None = None


def _castle_colours(castle: Any) -> list[str]:
    players = [p for p in getattr(castle, "players", ()) or () if p in KEEP_COLOURS]
    if players:
        return list(players)
    seen = [k.colour for k in castle.keeps if k.colour in KEEP_COLOURS]
    return sorted(set(seen)) or ["red", "blue"]


def layout_castle(castle: Any, cond: Conditions, rng: np.random.Generator) -> Layout:
    """Place the castle's pieces (with small hand-placement jitter) and the clutter beside it."""
    s = cond.piece_scale
    pitch = g.PITCH * s
    tower_side = g.TOWER_SIDE * s
    lattice = [tuple(t) for t in castle.towers] + [tuple(p) for w in castle.walls for p in (w.a, w.b)]
    if not lattice and not castle.keeps:
        raise ValueError("the castle has no pieces to render")
    pts = np.array(lattice or [tuple(k.at) for k in castle.keeps], float)
    lo, hi = pts.min(0), pts.max(0)
    # Centre the castle on the world origin.
    origin = -pitch * (lo + hi) / 2
    items: list[Item] = []

    def world(p: tuple[float, float]) -> np.ndarray:
        return origin + pitch * np.asarray(p, float)

    tower_mesh = g.tower(s)
    for i, (x, y) in enumerate(castle.towers):
        cx, cy = world((x, y)) + rng.normal(0, 0.3, 2)
        pose = g.pose(cx, cy, float(rng.normal(0, 1.0)))
        items.append(Item(f"tower-{i}", "tower", "grey", tower_mesh.transformed(pose),
                          (tower_side, tower_side, g.TOWER_HEIGHT * s), pose,
                          {"lattice": [int(x), int(y)]}))
    wall_meshes: dict[int, g.Mesh] = {}
    for i, w in enumerate(castle.walls):
        a, b = np.asarray(w.a, float), np.asarray(w.b, float)
        length = int(w.length)
        if length not in wall_meshes:
            wall_meshes[length] = g.wall(pitch * length - tower_side, s)
        cx, cy = world((a + b) / 2) + rng.normal(0, 0.25, 2)
        yaw = (0.0 if a[1] == b[1] else 90.0) + float(rng.normal(0, 0.5))
        pose = g.pose(cx, cy, yaw)
        kind = "short_wall" if length == 1 else "long_wall"
        items.append(Item(f"wall-{i}", kind, "grey", wall_meshes[length].transformed(pose),
                          (pitch * length - tower_side, g.WALL_THICK * s, g.WALL_HEIGHT * s), pose,
                          {"lattice": {"from": [int(v) for v in w.a], "to": [int(v) for v in w.b]}}))
    keep_rng = np.random.default_rng(cond.keep_rotation_seed)
    single, double = g.keep(s), g.double_keep(s)
    for i, k in enumerate(castle.keeps):
        cx, cy = world(tuple(k.at)) + keep_rng.normal(0, 1.0, 2)
        pose = g.pose(cx, cy, float(keep_rng.uniform(0, 90)))
        mesh = double if k.double else single
        height = g.KEEP_HEIGHT * s * (2 if k.double else 1)
        items.append(Item(f"keep-{i}", "keep", f"keep-{k.colour}", mesh.transformed(pose),
                          (g.KEEP_SIDE * s, g.KEEP_SIDE * s, height), pose,
                          {"colour": k.colour, "at": [float(v) for v in k.at], "double": bool(k.double)}))

    castle_pts = np.vstack([it.box_corners() for it in items])
    c_lo, c_hi = castle_pts[:, :2].min(0), castle_pts[:, :2].max(0)
    centre = np.array([(c_lo[0] + c_hi[0]) / 2, (c_lo[1] + c_hi[1]) / 2, 0.0])
    size = float(max(c_hi - c_lo))
    layout = Layout(items, origin, pitch, castle_pts, centre, size)
    _add_clutter(layout, castle, cond, rng, c_lo, c_hi)
    return layout


def _free_spot(rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray, radius: float, gap: tuple[float, float],
               taken: list[tuple[np.ndarray, float]]) -> np.ndarray | None:
    """A point outside the castle's box by a distance in `gap`, clear of what was placed already."""
    for _ in range(60):
        side = rng.integers(4)
        d = rng.uniform(*gap) + radius
        if side < 2:
            x = lo[0] - d if side == 0 else hi[0] + d
            y = rng.uniform(lo[1] - gap[0], hi[1] + gap[0])
        else:
            y = lo[1] - d if side == 2 else hi[1] + d
            x = rng.uniform(lo[0] - gap[0], hi[0] + gap[0])
        p = np.array([x, y])
        if all(np.linalg.norm(p - q) > radius + r for q, r in taken):
            return p
    return None


def _add_clutter(layout: Layout, castle: Any, cond: Conditions, rng: np.random.Generator,
                 lo: np.ndarray, hi: np.ndarray) -> None:
    s = cond.piece_scale
    colours = _castle_colours(castle)
    taken: list[tuple[np.ndarray, float]] = []
    if cond.mat:
        layout.mat = _place_mat(layout, cond, rng, lo, hi, taken)
    for i in range(cond.spare_keeps):
        p = _free_spot(rng, lo, hi, 12 * s, (15, 90), taken)
        if p is None:
            continue
        taken.append((p, 12 * s))
        colour = str(rng.choice(colours))
        pose = g.pose(p[0], p[1], float(rng.uniform(0, 90)))
        layout.items.append(Item(f"spare-keep-{i}", "keep", f"keep-{colour}", g.keep(s).transformed(pose),
                                 (g.KEEP_SIDE * s, g.KEEP_SIDE * s, g.KEEP_HEIGHT * s), pose,
                                 {"colour": colour, "double": False,
                                  "at": [float(v) for v in (p - layout.origin_mm) / layout.pitch_mm]},
                                 clutter=True))
    if cond.cards:
        p = _free_spot(rng, lo, hi, 70, (20, 120), taken)
        if p is not None:
            taken.append((p, 70))
            w, h, t = CARD_MM
            stacked = rng.random() < 0.5
            for i in range(cond.cards):
                colour = str(rng.choice(colours))
                if stacked:
                    q, yaw, z = p + rng.normal(0, 2, 2), float(rng.uniform(0, 360) if i == 0 else yaw + rng.normal(0, 4)), i * t
                else:
                    q, yaw, z = p + rng.normal(0, 30, 2), float(rng.uniform(0, 360)), i * t
                pose = g.pose(q[0], q[1], yaw, z)
                layout.items.append(Item(f"card-{i}", "card", f"card-{colour}",
                                         g.top_uv_slab(w, h, t).transformed(pose), (w, h, t), pose,
                                         {"colour": colour}, clutter=True))
    if cond.game_box:
        w, d, h = BOX_MM
        p = _free_spot(rng, lo, hi, 150, (40, 160), taken)
        if p is not None:
            taken.append((p, 210))
            pose = g.pose(p[0], p[1], float(rng.normal(0, 20)))
            layout.items.append(Item("game-box", "game_box", "game_box", g.top_uv_slab(w, d, h).transformed(pose),
                                     (w, d, h), pose, {}, clutter=True))


def _place_mat(layout: Layout, cond: Conditions, rng: np.random.Generator, lo: np.ndarray, hi: np.ndarray,
               taken: list[tuple[np.ndarray, float]]) -> dict[str, Any] | None:
    """The printed calibration mat beside (or partly under) the castle, if calibration.mat exists."""
    try:
        from calibration.mat import mat_layout
    except ImportError:
        return None
    w, h = mat_layout(cond.mat_paper).paper_mm
    radius = 0.5 * float(np.hypot(w, h))
    under = rng.random() < 0.3
    if under:
        # Partly under the castle: its centre near one edge of the castle.
        p = np.array([rng.uniform(lo[0], hi[0]), rng.choice([lo[1], hi[1]])])
    else:
        p = _free_spot(rng, lo, hi, radius, (5, 40), taken)
        if p is None:
            return None
    taken.append((p, radius))
    yaw = float(rng.uniform(0, 360))
    pose = g.pose(p[0], p[1], yaw, 0.0)
    thickness = 0.15
    layout.items.append(Item("mat", "mat", "mat", g.top_uv_slab(w, h, thickness).transformed(pose),
                             (w, h, thickness), pose, {"paper": cond.mat_paper, "under_castle": under},
                             clutter=True))
    # Paper mm (origin top-left, x right, y down the printed page) -> world mm on the table.
    corners_paper = np.array([[0, 0], [w, 0], [w, h], [0, h]], float)
    local = np.c_[corners_paper[:, 0] - w / 2, h / 2 - corners_paper[:, 1], np.full(4, thickness), np.ones(4)]
    world = (local @ pose.T)[:, :3]
    return {"paper": cond.mat_paper, "size_mm": [w, h], "under_castle": under,
            "corners_paper_mm": corners_paper.tolist(), "corners_world_mm": np.round(world, 3).tolist()}
