"""Render a castellan/1 castle as a phone-like photo with Mitsuba 3, and say exactly what is in it.

    bgr, truth = render_photo(castle, seed=7, width=1600, height=1200, spp=16)

`bgr` is the decoded JPEG (what a phone would deliver), `truth` the ground truth: the castle, the
camera (K, R, t), how lattice points map to table millimetres and to pixels, every piece's place in
the image (footprint, outline, box, visible pixels), the clutter and mat, and the conditions drawn.
"""
from __future__ import annotations

import colorsys
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from synth import geometry as g
from synth.backend import denoiser, load_mitsuba
from synth.camera import Camera, fit_camera
from synth.conditions import Conditions, colour_temperature_rgb, draw_conditions
from synth.postprocess import develop, encode_jpeg, with_phone_exif
from synth.scene import KEEP_SRGB, Item, Layout, layout_castle
from synth.textures import (box_lid_texture, card_texture, srgb_to_linear, stone_texture,
                            table_texture)

STONE_TILE_MM = 64.0
FLOOR_EXTENT_MM = 20000.0
FLOOR_DEPTH_MM = 740.0  # table height
GROUND_TRUTH_FORMAT = "castellan-synth/1"


def _as_castle(castle: Any) -> Any:
    """Accept a scoring.Castle, a castellan/1 dict or its JSON text."""
    if hasattr(castle, "towers") and hasattr(castle, "walls"):
        return castle
    from scoring import parse_castle

    return parse_castle(castle)


# ---------------------------------------------------------------------------------------------
# Materials


def _bitmap(mi: Any, image: np.ndarray, scale_u: float = 1.0, scale_v: float = 1.0, raw: bool = False) -> dict:
    return {
        "type": "bitmap",
        "bitmap": mi.Bitmap(np.ascontiguousarray(image, dtype=np.float32)),
        "raw": raw,
        "filter_type": "bilinear",
        "wrap_mode": "repeat",
        "to_uv": mi.ScalarTransform4f().scale([scale_u, scale_v, 1.0]),
    }


def _keep_rgb(colour: str, cond: Conditions) -> list[float]:
    r, gr, b = KEEP_SRGB[colour]
    h, s, v = colorsys.rgb_to_hsv(r, gr, b)
    h = (h + cond.keep_hue_shift / 360.0) % 1.0
    rgb = colorsys.hsv_to_rgb(h, s * cond.keep_saturation, v)
    return srgb_to_linear(np.array(rgb)).tolist()


def _materials(mi: Any, layout: Layout, cond: Conditions, rng: np.random.Generator) -> dict[str, dict]:
    stone_albedo, stone_height = stone_texture(rng)
    grey = float(srgb_to_linear(np.array([cond.grey_tone]))[0])
    # A faint warm or cool cast: grey plastics are rarely perfectly neutral.
    tint = np.array([1.0, 1.0, 1.0]) + rng.normal(0, 0.015, 3)
    stone_albedo = 1.0 + cond.stone_relief * (stone_albedo - 1.0)
    albedo = np.clip(stone_albedo[..., None] * grey * tint[None, None, :], 0, 1)
    s = 1.0 / (STONE_TILE_MM * cond.piece_scale)
    mats: dict[str, dict] = {
        "grey": {
            "type": "bumpmap",
            "arg": _bitmap(mi, stone_height[..., None], s, s, raw=True),
            "scale": 0.35 * cond.stone_relief,
            "bsdf": {"type": "roughplastic", "distribution": "ggx", "alpha": cond.plastic_roughness,
                     "int_ior": 1.49, "diffuse_reflectance": _bitmap(mi, albedo, s, s)},
        }
    }
    materials_used = {it.material for it in layout.items}
    for colour in KEEP_SRGB:
        if f"keep-{colour}" in materials_used:
            mats[f"keep-{colour}"] = {"type": "roughplastic", "distribution": "ggx",
                                      "alpha": float(rng.uniform(0.15, 0.35)), "int_ior": 1.49,
                                      "diffuse_reflectance": {"type": "rgb", "value": _keep_rgb(colour, cond)}}
        if f"card-{colour}" in materials_used:
            face = card_texture(KEEP_SRGB[colour], rng)
            mats[f"card-{colour}"] = {"type": "roughplastic", "alpha": 0.45, "int_ior": 1.4,
                                      "diffuse_reflectance": _bitmap(mi, face)}
    if "game_box" in materials_used:
        mats["game_box"] = {"type": "roughplastic", "alpha": 0.3, "int_ior": 1.45,
                            "diffuse_reflectance": _bitmap(mi, box_lid_texture(rng))}
    if "mat" in materials_used:
        from calibration.mat import mat_image

        sheet, _ = mat_image(cond.mat_paper, 4.0)
        # Mitsuba's v runs up the image; our slab's v runs up the page, so flip rows.
        paper = srgb_to_linear(np.repeat(sheet[::-1, :, None], 3, axis=2) / 255.0) * 0.88 + 0.01
        mats["mat"] = {"type": "roughplastic", "alpha": 0.5, "int_ior": 1.3,
                       "diffuse_reflectance": _bitmap(mi, paper)}
    return mats


def _mesh(mi: Any, name: str, mesh: g.Mesh, bsdf: Any) -> Any:
    props = mi.Properties()
    props["bsdf"] = bsdf
    props["face_normals"] = True
    m = mi.Mesh(name, len(mesh.vertices), len(mesh.faces), props=props,
                has_vertex_normals=False, has_vertex_texcoords=True)
    params = mi.traverse(m)
    params["vertex_positions"] = type(params["vertex_positions"])(mesh.vertices.astype(np.float32).ravel())
    params["faces"] = type(params["faces"])(mesh.faces.astype(np.uint32).ravel())
    params["vertex_texcoords"] = type(params["vertex_texcoords"])(mesh.uv.astype(np.float32).ravel())
    params.update()
    return m


# ---------------------------------------------------------------------------------------------
# Lights


def _keep_lights_out_of_view(cond: Conditions, camera: Camera, centre: np.ndarray) -> None:
    """Move lamps, windows and ceiling panels out of the frame: turn them about the castle, then lower
    them and move them further out. A glowing shape floating over the table is not a photo anyone
    takes, and it would wreck the exposure."""
    f = camera.K[0, 0]
    for light in cond.lights:
        if light.kind not in ("lamp", "window", "ceiling"):
            continue
        for step in range(40):
            e, a = np.radians(light.elevation_deg), np.radians(light.azimuth_deg)
            pos = centre + light.distance_mm * np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
            (u, v), depth = (x[0] for x in camera.project(pos[None, :]))
            reach = f * light.size_mm / max(depth, 1.0) + 0.05 * camera.width
            if depth <= 0 or not (-reach < u < camera.width + reach and -reach < v < camera.height + reach):
                break
            light.azimuth_deg = (light.azimuth_deg + 25.0) % 360.0
            if step % 14 == 13:  # a full turn did not help: lower it and move it further out
                light.elevation_deg = max(15.0, light.elevation_deg - 12.0)
                light.distance_mm *= 1.3


def _light_dicts(mi: Any, cond: Conditions, camera: Camera, centre: np.ndarray) -> dict[str, dict]:
    """Emitters scaled so that each light's direct illuminance at the castle centre is its weight."""
    out: dict[str, dict] = {}
    T = mi.ScalarTransform4f
    for i, light in enumerate(cond.lights):
        colour = colour_temperature_rgb(light.colour_temp_k)
        e, a = np.radians(light.elevation_deg), np.radians(light.azimuth_deg)
        direction = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
        if light.kind == "sun":
            irr = light.weight / max(np.sin(e), 0.2)
            out[f"light{i}"] = {"type": "directional", "direction": (-direction).tolist(),
                                "irradiance": {"type": "rgb", "value": (colour * irr).tolist()}}
        elif light.kind in ("window", "ceiling"):
            pos = centre + direction * light.distance_mm
            w, h = light.size_mm, light.size_mm * (0.7 if light.kind == "window" else 1.0)
            radiance = light.weight * light.distance_mm ** 2 / (w * h * max(np.sin(e), 0.2))
            up = [0, 0, 1] if light.elevation_deg < 80 else [1, 0, 0]
            out[f"light{i}"] = {
                "type": "rectangle",
                "to_world": T().look_at(origin=pos.tolist(), target=centre.tolist(), up=up) @ T().scale([w / 2, h / 2, 1]),
                "emitter": {"type": "area", "radiance": {"type": "rgb", "value": (colour * radiance).tolist()}},
            }
        else:  # lamp, flash: small spheres
            if light.kind == "flash":
                pos = camera.centre + camera.R[0] * 12.0
                d = pos - centre
                dist = float(np.linalg.norm(d))
                cos_in = max(d[2] / dist, 0.2)
            else:
                pos = centre + direction * light.distance_mm
                dist, cos_in = light.distance_mm, max(np.sin(e), 0.2)
            r = light.size_mm
            radiance = light.weight * dist ** 2 / (np.pi * r * r * cos_in)
            out[f"light{i}"] = {"type": "sphere", "center": pos.tolist(), "radius": r,
                                "emitter": {"type": "area", "radiance": {"type": "rgb", "value": (colour * radiance).tolist()}}}
    ambient = colour_temperature_rgb(cond.ambient_temp_k) * cond.ambient / np.pi
    out["ambient"] = {"type": "constant", "radiance": {"type": "rgb", "value": ambient.tolist()}}
    return out


# ---------------------------------------------------------------------------------------------
# Scene and rendering


def _sensor(mi: Any, camera: Camera, spp: int) -> dict:
    R, c = camera.R, camera.centre
    # Mitsuba's camera looks along +z with +x to the left of the image and +y up.
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = -R[0], -R[1], R[2], c
    return {
        "type": "perspective",
        "fov": camera.fov_x_deg(),
        "fov_axis": "x",
        "near_clip": 5.0,
        "far_clip": 2.0e5,
        "to_world": mi.ScalarTransform4f(m.tolist()),
        "sampler": {"type": "independent", "sample_count": spp},
        "film": {"type": "hdrfilm", "width": camera.width, "height": camera.height,
                 "rfilter": {"type": "box"}, "pixel_format": "rgba"},
    }


def _build_scene(mi: Any, layout: Layout, cond: Conditions, camera: Camera, spp: int,
                 rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    _keep_lights_out_of_view(cond, camera, layout.castle_centre)  # every scene, whoever builds it
    # Texture detail to match the photo: 2048 px tables for phone-sized photos, less for thumbnails.
    table = table_texture(cond.table_kind, rng, 2048 if camera.width * camera.height > 500_000 else 512)
    mats = _materials(mi, layout, cond, rng)
    bsdfs = {name: mi.load_dict(d) for name, d in mats.items()}
    table_mesh, table_box = _table_top(layout, rng)
    table_uv = _bitmap(mi, table.image, 1.0 / table.size_mm, 1.0 / table.size_mm)
    table_bsdf: dict = ({"type": "diffuse", "reflectance": table_uv} if table.roughness >= 1.0 else
                        {"type": "roughplastic", "distribution": "ggx", "alpha": table.roughness, "int_ior": 1.5,
                         "diffuse_reflectance": table_uv})
    # The floor below, seen past the table's edge in low shots: a darker second surface.
    floor = table_texture(str(rng.choice(["wood", "painted", "felt"])), rng, 512)
    floor_scale = FLOOR_EXTENT_MM / floor.size_mm
    scene: dict[str, Any] = {
        "type": "scene",
        "integrator": _integrator(mi),
        "sensor": _sensor(mi, camera, spp),
        "table": _mesh(mi, "table", table_mesh, mi.load_dict(table_bsdf)),
        "floor": {"type": "rectangle",
                  "to_world": mi.ScalarTransform4f().translate([0, 0, -FLOOR_DEPTH_MM]).scale([FLOOR_EXTENT_MM / 2] * 2 + [1]),
                  "bsdf": {"type": "diffuse", "reflectance": _bitmap(mi, floor.image * 0.6, floor_scale, floor_scale)}},
    }
    for it in layout.items:
        scene[it.name] = _mesh(mi, it.name, it.mesh, bsdfs[it.material])
    scene.update(_light_dicts(mi, cond, camera, layout.castle_centre))
    return mi.load_dict(scene), {"name": table.name, "kind": table.kind, "colour_srgb": list(table.rgb_srgb),
                                 "roughness": table.roughness, "top_mm": table_box, "floor": floor.name}


def _table_top(layout: Layout, rng: np.random.Generator) -> tuple[g.Mesh, list[float]]:
    """A finite table top (30 mm thick, top face at z = 0) with the castle and clutter well inside it."""
    pts = np.vstack([it.box_corners()[:, :2] for it in layout.items])
    lo, hi = pts.min(0) - 120, pts.max(0) + 120
    size = np.maximum(rng.uniform([1200, 800], [2000, 1200]), hi - lo + 200)
    slack = size - (hi - lo)
    x0, y0 = lo - rng.uniform(0.1, 0.9, 2) * slack
    box = [float(x0), float(y0), float(x0 + size[0]), float(y0 + size[1])]
    return g.box((box[0], box[1], -30.0), (box[2], box[3], 0.0), bottom=False), box


def _integrator(mi: Any) -> dict:
    path = {"type": "path", "max_depth": 6, "rr_depth": 4}
    if mi.variant().startswith("scalar"):
        # Mitsuba's scalar variant runs the AOV integrator about 20x slower than the path tracer
        # itself, so the fallback denoises from colour alone rather than with albedo and normals.
        return path
    return {"type": "aov", "aovs": "albedo:albedo,nn:sh_normal", "integrator": path}


def _render_linear(mi: Any, scene: Any, spp: int, seed: int) -> np.ndarray:
    out = np.array(mi.render(scene, spp=spp, seed=seed))
    colour = np.ascontiguousarray(out[..., :3])
    oidn = denoiser()
    if oidn is None:
        return colour
    if out.shape[-1] >= 10:  # colour, alpha, albedo, normals
        return np.asarray(oidn.denoise(colour, np.ascontiguousarray(out[..., 4:7]),
                                       np.ascontiguousarray(out[..., 7:10]), hdr=True))
    return np.asarray(oidn.denoise(colour, hdr=True))


def _label_image(mi: Any, scene: Any, layout: Layout) -> np.ndarray:
    """Per pixel: 1 + index of the item seen there (0: table or background). One sample per pixel."""
    integrator = mi.load_dict({"type": "aov", "aovs": "si:shape_index,dd:depth"})
    out = np.array(mi.render(scene, integrator=integrator, spp=1, seed=1))
    index, depth = out[..., -2], out[..., -1]
    names = [s.id() for s in scene.shapes()]
    # The AOV numbers shapes from 1 in the order of scene.shapes(); 0 is a miss.
    order = {it.name: i + 1 for i, it in enumerate(layout.items)}
    lookup = np.array([0] + [order.get(name, 0) for name in names], np.int32)
    idx = np.clip(np.round(index).astype(np.int64), 0, len(names))
    labels = lookup[idx]
    labels[depth <= 0] = 0
    return labels.astype(np.uint16)


def _piece_truth(it: Item, index: int, camera: Camera, labels: np.ndarray) -> dict[str, Any]:
    uv, _ = camera.project(it.box_corners())
    hull = cv2.convexHull(uv.astype(np.float32)).reshape(-1, 2).astype(float)
    base, _ = camera.project(it.base_corners())
    top_centre = (it.pose @ np.array([0, 0, it.box_size[2], 1.0]))[:3]
    base_centre = it.pose[:3, 3]
    (top_px, base_px), _ = camera.project(np.array([top_centre, base_centre]))
    x0, y0 = uv.min(0)
    x1, y1 = uv.max(0)
    inside = bool(x0 >= 0 and y0 >= 0 and x1 <= camera.width - 1 and y1 <= camera.height - 1)
    d: dict[str, Any] = {"id": it.name, "kind": it.kind, "mask_id": index}
    d.update(it.info)
    d.update({
        "world_mm": np.round(base_centre, 3).tolist(),
        "yaw_deg": round(float(np.degrees(np.arctan2(it.pose[1, 0], it.pose[0, 0]))), 3),
        "size_mm": [round(v, 3) for v in it.box_size],
        "footprint_px": np.round(base, 2).tolist(),
        "outline_px": np.round(hull, 2).tolist(),
        "bbox_px": [round(float(v), 2) for v in (x0, y0, x1, y1)],
        "top_px": np.round(top_px, 2).tolist(),
        "base_px": np.round(base_px, 2).tolist(),
        "in_frame": inside,
        "visible_px": int(np.count_nonzero(labels == index)),
    })
    return d


@dataclass
class PhotoScene:
    """Everything one seed's photo is rendered from; `rng` goes on to develop the picture."""

    mi: Any
    variant: str
    cond: Conditions
    rng: np.random.Generator
    layout: Layout
    camera: Camera
    scene: Any
    table: dict[str, Any]


def photo_scene(castle: Any, seed: int, width: int, height: int, spp: int,
                overrides: dict[str, Any] | None = None) -> PhotoScene:
    """The Mitsuba scene of photo `seed` of a castle (scoring.Castle): conditions, layout, camera and
    lights all drawn from the seed, so the same seed always builds the same scene."""
    cond = draw_conditions(int(seed), overrides)
    rng = np.random.default_rng([int(seed), 0x5EED])
    mi, variant = load_mitsuba()
    layout = layout_castle(castle, cond, rng)
    size = layout.castle_size_mm
    target = layout.castle_centre + np.array([cond.target_offset[0] * size, cond.target_offset[1] * size, 0])
    camera = fit_camera(layout.castle_points, target, width, height, cond.focal_mm, cond.elevation_deg,
                        cond.azimuth_deg, cond.roll_deg, cond.margin)
    scene, table = _build_scene(mi, layout, cond, camera, spp, rng)
    return PhotoScene(mi, variant, cond, rng, layout, camera, scene, table)


def render_jpeg(castle: Any, seed: int = 0, width: int = 1600, height: int = 1200, spp: int = 16,
                overrides: dict[str, Any] | None = None) -> tuple[bytes, dict[str, Any], np.ndarray]:
    """Render `castle` (scoring.Castle or castellan/1 dict) into a phone-like JPEG.

    Returns the JPEG bytes, the ground truth dict (see module docstring) and the per-pixel item
    labels (uint16; value = the mask_id of the piece or clutter seen there, 0 for table and room).
    """
    if width < 16 or height < 16 or width * height > 60_000_000:
        raise ValueError(f"image size {width}x{height} is out of range (16x16 .. 60 megapixels)")
    if spp < 1:
        raise ValueError(f"spp must be at least 1, got {spp}")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    castle = _as_castle(castle)
    ps = photo_scene(castle, seed, width, height, spp, overrides)
    timings["scene_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    linear = _render_linear(ps.mi, ps.scene, spp, int(seed) % (1 << 31))
    timings["render_s"] = time.perf_counter() - t1
    labels = _label_image(ps.mi, ps.scene, ps.layout)
    t2 = time.perf_counter()
    jpeg = encode_jpeg(develop(linear, ps.cond, ps.rng), ps.cond.jpeg_quality)
    if ps.cond.exif_focal:
        jpeg = with_phone_exif(jpeg, ps.cond.focal_mm)
    timings["develop_s"] = time.perf_counter() - t2
    timings["total_s"] = time.perf_counter() - t0
    truth = _ground_truth(castle, ps.layout, ps.camera, ps.cond, ps.table, labels, int(seed), ps.variant, spp, timings)
    return jpeg, truth, labels


def render_photo(castle: Any, seed: int = 0, width: int = 1600, height: int = 1200, spp: int = 16,
                 overrides: dict[str, Any] | None = None, *, return_labels: bool = False
                 ) -> tuple[np.ndarray, dict[str, Any]] | tuple[np.ndarray, dict[str, Any], np.ndarray]:
    """Like render_jpeg, but returns the decoded JPEG as BGR uint8 (what a phone would deliver)."""
    jpeg, truth, labels = render_jpeg(castle, seed, width, height, spp, overrides)
    photo = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    return (photo, truth, labels) if return_labels else (photo, truth)


def _ground_truth(castle: Any, layout: Layout, camera: Camera, cond: Conditions, table: dict[str, Any],
                  labels: np.ndarray, seed: int, variant: str, spp: int, timings: dict[str, float]) -> dict[str, Any]:
    pieces, clutter = [], []
    for i, it in enumerate(layout.items):
        (clutter if it.clutter else pieces).append(_piece_truth(it, i + 1, camera, labels))
    ox, oy = layout.origin_mm
    p = layout.pitch_mm
    lattice_to_table = np.array([[p, 0, ox], [0, p, oy], [0, 0, 1.0]])
    table_to_image = camera.K @ np.c_[camera.R[:, 0], camera.R[:, 1], camera.t]
    lattice_to_image = table_to_image @ lattice_to_table
    castle_json = castle.to_json()
    spares = [{"colour": c["colour"], "at": c["at"], "double": False} for c in clutter if c["kind"] == "keep"]
    with_supply = dict(castle_json, keeps=list(castle_json.get("keeps", [])) + spares)
    conditions = cond.to_json()
    conditions.update({"table": table["name"], "table_kind": table["kind"], "mat_present": layout.mat is not None,
                       "jpeg_quality": cond.jpeg_quality})
    return {
        "format": GROUND_TRUTH_FORMAT,
        "rendered": True,
        "castle": castle_json,
        "castle_with_supply": with_supply,
        "camera": camera.to_json(),
        "lattice_to_table": {
            "origin_mm": [round(float(ox), 4), round(float(oy), 4)],
            "pitch_mm": round(p, 4),
            "rotation_deg": 0.0,
            "matrix": np.round(lattice_to_table, 6).tolist(),
            "note": "table_mm = origin_mm + pitch_mm * [x, y]; the table is the plane z = 0 of the world frame",
        },
        "castle_centre_mm": np.round(layout.castle_centre, 3).tolist(),
        "lattice_to_image": (lattice_to_image / lattice_to_image[2, 2]).tolist(),
        "table_to_image": (table_to_image / table_to_image[2, 2]).tolist(),
        "pieces": pieces,
        "clutter": clutter,
        "mat": _mat_truth(layout.mat, camera),
        "table": table,
        "conditions": conditions,
        "seed": seed,
        "renderer": {"engine": "mitsuba3", "variant": variant, "spp": spp,
                     "timings_s": {k: round(v, 3) for k, v in timings.items()}},
    }


def _mat_truth(mat: dict[str, Any] | None, camera: Camera) -> dict[str, Any] | None:
    if mat is None:
        return None
    px, _ = camera.project(np.array(mat["corners_world_mm"]))
    return dict(mat, corners_px=np.round(px, 2).tolist())


def save_photo(path: str | Path, photo: bytes | np.ndarray, truth: dict[str, Any],
               labels: np.ndarray | None = None) -> Path:
    """Write photo.jpg, photo.json (ground truth) and, given labels, photo_mask.png.

    `photo` is the JPEG bytes from render_jpeg (written as they are) or a BGR image (encoded at the
    JPEG quality the conditions drew).
    """
    path = Path(path)
    if path.suffix.lower() not in (".jpg", ".jpeg"):
        raise ValueError(f"{path}: the photo is a JPEG, give a .jpg path")
    path.parent.mkdir(parents=True, exist_ok=True)
    jpeg = photo if isinstance(photo, bytes) else encode_jpeg(photo, truth["conditions"]["jpeg_quality"])
    path.write_bytes(jpeg)
    truth = dict(truth, image=path.name)
    if labels is not None:
        mask_path = path.with_name(path.stem + "_mask.png")
        cv2.imwrite(str(mask_path), labels.astype(np.uint16))
        truth["mask"] = mask_path.name
    path.with_suffix(".json").write_text(json.dumps(truth))
    return path
