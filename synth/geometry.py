"""Triangle meshes of the Castellan pieces and the props beside them, built from boxes.

Everything is in millimetres in the piece's own frame: the base sits on z = 0, centred on the origin,
a wall runs along x. Texture coordinates are planar projections in millimetres (u, v along the face),
so a texture's scale is set by the material, and a stone pattern keeps its size on every piece.
The dimensions follow spec/pieces-and-photos.md and scale with one factor per scene.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Spec estimates (mm) at scale 1.
TOWER_SIDE = 22.0
TOWER_HEIGHT = 42.0
WALL_THICK = 9.0
WALL_HEIGHT = 30.0
KEEP_SIDE = 16.0
KEEP_HEIGHT = 22.0
PITCH = 54.0  # tower + short wall


@dataclass
class Mesh:
    """Flat-shaded triangle mesh: vertices (N, 3), faces (M, 3), texture coordinates (N, 2) in mm."""

    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    faces: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    uv: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    def extend(self, other: "Mesh") -> "Mesh":
        base = len(self.vertices)
        self.vertices = np.vstack([self.vertices, other.vertices])
        self.faces = np.vstack([self.faces, other.faces + base])
        self.uv = np.vstack([self.uv, other.uv])
        return self

    def transformed(self, matrix: np.ndarray) -> "Mesh":
        """A copy moved by a 4x4 rigid/scaling matrix (texture coordinates stay with the piece)."""
        v = np.c_[self.vertices, np.ones(len(self.vertices))] @ matrix.T
        return Mesh(v[:, :3].copy(), self.faces.copy(), self.uv.copy())

    def corners(self) -> np.ndarray:
        """The 8 corners of the axis-aligned bounding box, (8, 3)."""
        lo, hi = self.vertices.min(0), self.vertices.max(0)
        return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])


# Each face of a box: the corner indices (counter-clockwise seen from outside) and which axes span it.
_BOX_FACES = (
    ((0, 3, 2, 1), (0, 1)),  # bottom (-z)
    ((4, 5, 6, 7), (0, 1)),  # top (+z)
    ((0, 1, 5, 4), (0, 2)),  # -y
    ((2, 3, 7, 6), (0, 2)),  # +y
    ((1, 2, 6, 5), (1, 2)),  # +x
    ((3, 0, 4, 7), (1, 2)),  # -x
)


def box(lo: tuple[float, float, float], hi: tuple[float, float, float], *, bottom: bool = True) -> Mesh:
    """An axis-aligned box from corner `lo` to corner `hi`."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    c = np.array([[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
                  [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]], float)
    verts, faces, uvs = [], [], []
    for quad, axes in _BOX_FACES if bottom else _BOX_FACES[1:]:
        b = len(verts)
        for i in quad:
            verts.append(c[i])
            uvs.append((c[i][axes[0]], c[i][axes[1]]))
        faces += [(b, b + 1, b + 2), (b, b + 2, b + 3)]
    return Mesh(np.array(verts), np.array(faces, np.int64), np.array(uvs, float))


def merge(parts: list[Mesh]) -> Mesh:
    out = Mesh()
    for p in parts:
        out.extend(p)
    return out


def tower(scale: float = 1.0) -> Mesh:
    """Tower: square body, a vertical slot in the middle of each side, crenellated parapet on top."""
    t, h = TOWER_SIDE * scale, TOWER_HEIGHT * scale
    a = t / 2
    merlon_h = 0.15 * h
    body_top = h - merlon_h
    slot_w, slot_d = 0.26 * t, 0.12 * t
    slot_top = body_top - 0.08 * h
    parts = [box((-a + slot_d, -a + slot_d, 0), (a - slot_d, a - slot_d, body_top))]
    s = slot_w / 2
    for sign in (-1, 1):
        x0, x1 = sorted((sign * a, sign * (a - slot_d)))
        # Faces at +-x: two slabs beside the slot, and a lintel above it.
        parts += [box((x0, -a, 0), (x1, -s, body_top)), box((x0, s, 0), (x1, a, body_top)),
                  box((x0, -s, slot_top), (x1, s, body_top))]
        # Faces at +-y.
        parts += [box((-a, x0, 0), (-s, x1, body_top)), box((s, x0, 0), (a, x1, body_top)),
                  box((-s, x0, slot_top), (s, x1, body_top))]
    # Parapet: four corner merlons and one in the middle of each side.
    rim, corner, mid = 0.2 * t, 0.24 * t, 0.22 * t
    for sx in (-1, 1):
        for sy in (-1, 1):
            xs = sorted((sx * a, sx * (a - corner)))
            ys = sorted((sy * a, sy * (a - corner)))
            parts.append(box((xs[0], ys[0], body_top), (xs[1], ys[1], h), bottom=False))
    for sign in (-1, 1):
        r = sorted((sign * a, sign * (a - rim)))
        parts.append(box((r[0], -mid / 2, body_top), (r[1], mid / 2, h), bottom=False))
        parts.append(box((-mid / 2, r[0], body_top), (mid / 2, r[1], h), bottom=False))
    return merge(parts)


def wall(length_mm: float, scale: float = 1.0) -> Mesh:
    """Wall along x, `length_mm` from tower face to tower face, crenellated top edge, a tab at each end."""
    w, h = WALL_THICK * scale, WALL_HEIGHT * scale
    half = length_mm / 2
    merlon_h = 0.17 * h
    body_top = h - merlon_h
    parts = [box((-half, -w / 2, 0), (half, w / 2, body_top))]
    merlon_w, gap = 5.5 * scale, 3.8 * scale
    n = max(2, int(round((length_mm + gap) / (merlon_w + gap))))
    gap = (length_mm - n * merlon_w) / (n - 1)
    for i in range(n):
        x0 = -half + i * (merlon_w + gap)
        parts.append(box((x0, -w / 2, body_top), (x0 + merlon_w, w / 2, h), bottom=False))
    # Tabs that plug into the towers' slots (they fill the slot when a tower stands there).
    tab_d, tab_w = 0.12 * TOWER_SIDE * scale, 0.22 * TOWER_SIDE * scale
    tab_h = body_top - 0.1 * h
    for sign in (-1, 1):
        x0, x1 = sorted((sign * half, sign * (half + tab_d)))
        parts.append(box((x0, -tab_w / 2, 0), (x1, tab_w / 2, tab_h)))
    return merge(parts)


def keep(scale: float = 1.0) -> Mesh:
    """Keep: a small square tower with four corner merlons."""
    k, h = KEEP_SIDE * scale, KEEP_HEIGHT * scale
    a = k / 2
    merlon_h = 0.2 * h
    parts = [box((-a, -a, 0), (a, a, h - merlon_h))]
    m = 0.3 * k
    for sx in (-1, 1):
        for sy in (-1, 1):
            xs = sorted((sx * a, sx * (a - m)))
            ys = sorted((sy * a, sy * (a - m)))
            parts.append(box((xs[0], ys[0], h - merlon_h), (xs[1], ys[1], h), bottom=False))
    return merge(parts)


def double_keep(scale: float = 1.0) -> Mesh:
    """Two keeps stacked (a Double Keep), about 44 mm high."""
    lower = keep(scale)
    shift = np.eye(4)
    shift[2, 3] = KEEP_HEIGHT * scale
    return merge([lower, keep(scale).transformed(shift)])


def slab(width: float, depth: float, thickness: float) -> Mesh:
    """A flat box centred on the origin on z = 0 (cards, the mat, the game box)."""
    return box((-width / 2, -depth / 2, 0), (width / 2, depth / 2, thickness), bottom=False)


def top_uv_slab(width: float, depth: float, thickness: float) -> Mesh:
    """A slab whose top face maps the whole texture once (u right, v up: image top at +y)."""
    mesh = slab(width, depth, thickness)
    top = np.isclose(mesh.vertices[:, 2], thickness)
    uv = np.zeros_like(mesh.uv)
    uv[:, 0] = (mesh.vertices[:, 0] + width / 2) / width
    uv[:, 1] = (mesh.vertices[:, 1] + depth / 2) / depth
    # Sides take the texture's edge colour.
    uv[~top] = np.clip(uv[~top], 0.001, 0.999)
    mesh.uv = uv
    return mesh


def pose(x: float, y: float, yaw_deg: float, z: float = 0.0) -> np.ndarray:
    """4x4 matrix: rotate about z by `yaw_deg`, then move to (x, y, z)."""
    c, s = np.cos(np.radians(yaw_deg)), np.sin(np.radians(yaw_deg))
    m = np.eye(4)
    m[:2, :2] = [[c, -s], [s, c]]
    m[:3, 3] = (x, y, z)
    return m
