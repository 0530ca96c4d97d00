"""Calibration profiles: small versioned JSON files, loaded and validated with clear errors.

A profile file holds any of three sections; `castellan calibrate ...` writes one section and keeps
the others already in the file, so a user can keep one file per phone/table/set:

    {
      "format": "castellan-profile/1",
      "camera": {"image_size": [4032, 3024], "focal_px": [3100.5, 3101.2],
                 "principal_point_px": [2016.0, 1512.0], "distortion": [k1, k2, p1, p2, k3],
                 "reprojection_error_px": 0.41, "views": 8},
      "pieces": {"tower": {"footprint_mm": [22.1, 22.0], "height_mm": 42.0},
                 "short_wall": {"footprint_mm": [32.0, 9.1], "height_mm": 30.0},
                 "long_wall": {"footprint_mm": [86.2, 9.0], "height_mm": 30.0},
                 "keep": {"footprint_mm": [16.0, 16.0], "height_mm": 22.0}},
      "colours": {"keeps": {"red": {"lab": [45.1, 60.2, 41.0], "hue_deg": 4.0}, "blue": {...},
                            "yellow": {...}, "green": {...}}}
    }

Footprints are [length, width] in mm (length >= width; for a wall, length is tower face to tower
face). Heights are optional (null when not measured). "lab" is CIELAB (D65) of the keep's top as
photographed under the user's light; "hue_deg" is its CIELAB hue angle h_ab = atan2(b*, a*) in
degrees (0..360; derived from "lab" when absent).

API: `load_profile(path) -> Profile` (raises `ProfileError`, a ValueError naming the file and the
field), `parse_profile(dict | str | bytes, source=...) -> Profile` (for the web app's configuration),
`Profile.to_json()`, `save_profile(profile, path, merge=True)`, and the section classes
`CameraProfile`, `PieceProfile`, `ColourProfile` (`ColourProfile.classify(lab)`).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "castellan-profile/1"
PIECE_KINDS: tuple[str, ...] = ("tower", "short_wall", "long_wall", "keep")
KEEP_COLOURS: tuple[str, ...] = ("red", "blue", "yellow", "green")
# A profile is a few hundred bytes; anything much bigger is not one.
MAX_BYTES = 64 * 1024


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the field."""


def _fail(source: str, where: str, problem: str) -> ProfileError:
    return ProfileError(f"{source}: {where} {problem}")


def _numbers(value: Any, n: int | None, source: str, where: str, *, positive: bool = False,
             minimum: float | None = None) -> list[float]:
    what = f"a list of {n} numbers" if n else "a list of numbers"
    if not isinstance(value, (list, tuple)) or (n is not None and len(value) != n):
        raise _fail(source, where, f"must be {what}, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise _fail(source, where, f"must be {what}, got {value!r}")
        if positive and v <= 0:
            raise _fail(source, where, f"must be positive, got {value!r}")
        if minimum is not None and v < minimum:
            raise _fail(source, where, f"must be at least {minimum:g}, got {value!r}")
        out.append(float(v))
    return out


def _number(value: Any, source: str, where: str, *, positive: bool = False, optional: bool = False,
            minimum: float | None = None) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(source, where, f"must be a number, got {value!r}")
    if positive and value <= 0:
        raise _fail(source, where, f"must be positive, got {value!r}")
    if minimum is not None and value < minimum:
        raise _fail(source, where, f"must be at least {minimum:g}, got {value!r}")
    return float(value)


def _object(value: Any, source: str, where: str) -> dict:
    if not isinstance(value, dict):
        raise _fail(source, where, f"must be a JSON object, got {type(value).__name__}")
    return value


def _no_extra(obj: dict, allowed: set[str], source: str, where: str) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise _fail(source, f"{where}.{extra[0]}", f"is not a known field (known: {', '.join(sorted(allowed))})")


@dataclass(frozen=True)
class CameraProfile:
    """Intrinsics of one camera at one image size (pixels)."""

    image_size: tuple[int, int]
    focal_px: tuple[float, float]
    principal_point_px: tuple[float, float]
    distortion: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)
    reprojection_error_px: float | None = None
    views: int | None = None

    def matrix(self) -> np.ndarray:
        (fx, fy), (cx, cy) = self.focal_px, self.principal_point_px
        return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])

    def dist_coeffs(self) -> np.ndarray:
        return np.asarray(self.distortion, dtype=np.float64)

    def for_image_size(self, width: int, height: int) -> "CameraProfile":
        """The same camera for a photo of another size: scaled, or turned for the other orientation.

        A photo at a different resolution of the same sensor scales the intrinsics; a portrait photo
        from a landscape calibration swaps the axes (radial distortion is unchanged, the tiny
        tangential terms are dropped since the direction of the turn is not known).
        Raises ProfileError when the aspect ratio differs (a cropped mode: calibrate it separately).
        """
        w0, h0 = self.image_size
        prof = self
        if (w0 > h0) != (width > height) and w0 != h0 and width != height:
            (fx, fy), (cx, cy) = self.focal_px, self.principal_point_px
            d = list(self.distortion) + [0.0] * (5 - len(self.distortion))
            d[2] = d[3] = 0.0
            prof = replace(self, image_size=(h0, w0), focal_px=(fy, fx),
                           principal_point_px=(h0 - cy, cx), distortion=tuple(d))
            w0, h0 = h0, w0
        sx, sy = width / w0, height / h0
        if abs(sx / sy - 1) > 0.01:
            raise ProfileError(f"camera profile is for {w0}x{h0} photos, this photo is {width}x{height} "
                               "(another aspect ratio): calibrate the camera in this photo mode")
        if abs(sx - 1) < 1e-9 and prof is self:
            return self
        (fx, fy), (cx, cy) = prof.focal_px, prof.principal_point_px
        return replace(prof, image_size=(int(width), int(height)), focal_px=(fx * sx, fy * sy),
                       principal_point_px=((cx + 0.5) * sx - 0.5, (cy + 0.5) * sy - 0.5))

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "image_size": list(self.image_size),
            "focal_px": [round(v, 3) for v in self.focal_px],
            "principal_point_px": [round(v, 3) for v in self.principal_point_px],
            "distortion": [round(v, 8) for v in self.distortion],
        }
        if self.reprojection_error_px is not None:
            out["reprojection_error_px"] = round(self.reprojection_error_px, 4)
        if self.views is not None:
            out["views"] = self.views
        return out

    @classmethod
    def from_json(cls, obj: Any, source: str = "profile", where: str = "camera") -> "CameraProfile":
        obj = _object(obj, source, where)
        _no_extra(obj, {"image_size", "focal_px", "principal_point_px", "distortion",
                        "reprojection_error_px", "views"}, source, where)
        for key in ("image_size", "focal_px", "principal_point_px"):
            if key not in obj:
                raise _fail(source, f"{where}.{key}", "is missing")
        size = _numbers(obj["image_size"], 2, source, f"{where}.image_size", positive=True)
        if any(v != int(v) for v in size):
            raise _fail(source, f"{where}.image_size", f"must be whole pixels, got {obj['image_size']!r}")
        focal = _numbers(obj["focal_px"], 2, source, f"{where}.focal_px", positive=True)
        pp = _numbers(obj["principal_point_px"], 2, source, f"{where}.principal_point_px")
        if not all(0 <= p <= s for p, s in zip(pp, size)):
            raise _fail(source, f"{where}.principal_point_px", f"must lie inside the image {size!r}, got {pp!r}")
        dist = obj.get("distortion", [0.0] * 5)
        if not isinstance(dist, list) or len(dist) not in (4, 5, 8, 12, 14):
            raise _fail(source, f"{where}.distortion", f"must be OpenCV's 4, 5, 8, 12 or 14 coefficients, got {dist!r}")
        dist = _numbers(dist, None, source, f"{where}.distortion")
        err = _number(obj.get("reprojection_error_px"), source, f"{where}.reprojection_error_px",
                      optional=True, minimum=0)
        views = obj.get("views")
        if views is not None and (isinstance(views, bool) or not isinstance(views, int) or views < 1):
            raise _fail(source, f"{where}.views", f"must be a positive whole number, got {views!r}")
        return cls((int(size[0]), int(size[1])), (focal[0], focal[1]), (pp[0], pp[1]), tuple(dist), err, views)


@dataclass(frozen=True)
class PieceSize:
    footprint_mm: tuple[float, float]  # (length, width), length >= width
    height_mm: float | None = None

    def to_json(self) -> dict:
        return {"footprint_mm": [round(v, 2) for v in self.footprint_mm],
                "height_mm": None if self.height_mm is None else round(self.height_mm, 2)}


# Spec sizes (mm) as shares of the 54 mm lattice pitch, to tell a mis-measured profile from a set of
# another size: (kind, field, index or None for the height, nominal mm).
_NOMINAL_SHARES = (("tower", "footprint_mm", 0, 22.0), ("tower", "height_mm", None, 42.0),
                   ("short_wall", "footprint_mm", 1, 9.0), ("short_wall", "height_mm", None, 30.0),
                   ("long_wall", "footprint_mm", 0, 86.0), ("long_wall", "footprint_mm", 1, 9.0),
                   ("long_wall", "height_mm", None, 30.0),
                   ("keep", "footprint_mm", 0, 16.0), ("keep", "height_mm", None, 22.0))
# The spec allows +-20 % for a whole set; one piece's size relative to the pitch varies far less.
# Beyond this factor the piece was measured wrong (lying down, two pieces touching).
PROPORTION_FACTOR = 1.5


@dataclass(frozen=True)
class PieceProfile:
    """Measured sizes of one set's pieces (mm)."""

    tower: PieceSize
    short_wall: PieceSize
    long_wall: PieceSize
    keep: PieceSize

    @property
    def lattice_pitch_mm(self) -> float:
        """Distance between neighbouring tower centres: tower side + short wall length."""
        return self.tower.footprint_mm[0] + self.short_wall.footprint_mm[0]

    def to_json(self) -> dict:
        return {k: getattr(self, k).to_json() for k in PIECE_KINDS}

    def check_proportions(self, source: str = "profile", where: str = "pieces") -> "PieceProfile":
        """Raise ProfileError naming the field when a size cannot belong to one Castellan set: each
        size, as a share of the lattice pitch (tower side + short wall length), within a factor of
        PROPORTION_FACTOR of the spec's share. Returns self."""
        pitch = self.lattice_pitch_mm
        tower_share = self.tower.footprint_mm[0] / pitch
        if not 22.0 / 54 / PROPORTION_FACTOR <= tower_share <= min(0.9, 22.0 / 54 * PROPORTION_FACTOR):
            raise _fail(source, f"{where}.tower.footprint_mm and {where}.short_wall.footprint_mm",
                        f"give a tower of {self.tower.footprint_mm[0]:g} mm and a short wall of "
                        f"{self.short_wall.footprint_mm[0]:g} mm, which no Castellan set has (about 22 and 32 mm): "
                        "measure the pieces again with `castellan calibrate pieces`")
        for kind, key, index, nominal in _NOMINAL_SHARES:
            size = getattr(self, kind)
            value = size.height_mm if index is None else size.footprint_mm[index]
            if value is None:
                continue
            share, expected = value / pitch, nominal / 54.0
            if not expected / PROPORTION_FACTOR <= share <= expected * PROPORTION_FACTOR:
                raise _fail(source, f"{where}.{kind}.{key}",
                            f"gives {value:g} mm where a set with a {pitch:.1f} mm lattice pitch has about "
                            f"{expected * pitch:.0f} mm: measure the pieces again with `castellan calibrate pieces`")
        return self

    @classmethod
    def from_json(cls, obj: Any, source: str = "profile", where: str = "pieces") -> "PieceProfile":
        obj = _object(obj, source, where)
        _no_extra(obj, set(PIECE_KINDS), source, where)
        sizes = {}
        for kind in PIECE_KINDS:
            w = f"{where}.{kind}"
            if kind not in obj:
                raise _fail(source, w, "is missing")
            p = _object(obj[kind], source, w)
            _no_extra(p, {"footprint_mm", "height_mm"}, source, w)
            if "footprint_mm" not in p:
                raise _fail(source, f"{w}.footprint_mm", "is missing")
            fp = _numbers(p["footprint_mm"], 2, source, f"{w}.footprint_mm", positive=True)
            if not all(1.0 <= v <= 300.0 for v in fp):
                raise _fail(source, f"{w}.footprint_mm", f"must be between 1 and 300 mm, got {fp!r}")
            h = _number(p.get("height_mm"), source, f"{w}.height_mm", positive=True, optional=True)
            sizes[kind] = PieceSize((max(fp), min(fp)), h)
        return cls(**sizes).check_proportions(source, where)


@dataclass(frozen=True)
class KeepColour:
    lab: tuple[float, float, float]
    hue_deg: float

    def to_json(self) -> dict:
        return {"lab": [round(v, 2) for v in self.lab], "hue_deg": round(self.hue_deg, 1)}


@dataclass(frozen=True)
class ColourProfile:
    """Keep colours as photographed under the user's light."""

    keeps: dict[str, KeepColour] = field(default_factory=dict)

    def classify(self, lab: tuple[float, float, float] | np.ndarray) -> tuple[str, float]:
        """Nearest keep colour to a measured CIELAB colour, by chroma-plane distance (a*, b*).

        Lightness is left out on purpose: shadows and glare change L* far more than hue.
        Returns (colour, distance in a*b* units).
        """
        if not self.keeps:
            raise ProfileError("colour profile has no keep colours")
        a, b = float(lab[1]), float(lab[2])
        best = min(self.keeps.items(), key=lambda kv: (kv[1].lab[1] - a) ** 2 + (kv[1].lab[2] - b) ** 2)
        d = math.hypot(best[1].lab[1] - a, best[1].lab[2] - b)
        return best[0], d

    def to_json(self) -> dict:
        return {"keeps": {k: v.to_json() for k, v in self.keeps.items()}}

    @classmethod
    def from_json(cls, obj: Any, source: str = "profile", where: str = "colours") -> "ColourProfile":
        obj = _object(obj, source, where)
        _no_extra(obj, {"keeps"}, source, where)
        if "keeps" not in obj:
            raise _fail(source, f"{where}.keeps", "is missing")
        keeps = _object(obj["keeps"], source, f"{where}.keeps")
        if not keeps:
            raise _fail(source, f"{where}.keeps", f"must name at least one of {', '.join(KEEP_COLOURS)}")
        out = {}
        for name, val in keeps.items():
            w = f"{where}.keeps.{name}"
            if name not in KEEP_COLOURS:
                raise _fail(source, w, f"is not a keep colour (one of {', '.join(KEEP_COLOURS)})")
            val = _object(val, source, w)
            _no_extra(val, {"lab", "hue_deg"}, source, w)
            if "lab" not in val:
                raise _fail(source, f"{w}.lab", "is missing")
            lab = _numbers(val["lab"], 3, source, f"{w}.lab")
            if not 0 <= lab[0] <= 100 or not all(-128 <= v <= 128 for v in lab[1:]):
                raise _fail(source, f"{w}.lab", f"must be CIELAB (L* 0..100, a* and b* -128..128), got {lab!r}")
            hue = _number(val.get("hue_deg", _lab_hue(lab)), source, f"{w}.hue_deg")
            if not 0 <= hue <= 360:
                raise _fail(source, f"{w}.hue_deg", f"must be between 0 and 360, got {hue!r}")
            out[name] = KeepColour((lab[0], lab[1], lab[2]), hue)
        return cls(out)


def _lab_hue(lab: list[float]) -> float:
    return round(math.degrees(math.atan2(lab[2], lab[1])) % 360.0, 1)


@dataclass(frozen=True)
class Profile:
    """Everything a user calibrated; any section may be None (the pipeline then uses defaults)."""

    camera: CameraProfile | None = None
    pieces: PieceProfile | None = None
    colours: ColourProfile | None = None

    def merged(self, other: "Profile") -> "Profile":
        """This profile with the sections `other` has replacing ours."""
        return Profile(other.camera or self.camera, other.pieces or self.pieces, other.colours or self.colours)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"format": FORMAT}
        for key in ("camera", "pieces", "colours"):
            sec = getattr(self, key)
            if sec is not None:
                out[key] = sec.to_json()
        return out


def parse_profile(data: dict | str | bytes, source: str = "profile") -> Profile:
    """Validate a profile given as a dict or JSON text; `source` names it in error messages."""
    if isinstance(data, (bytes, bytearray)):
        if len(data) > MAX_BYTES:
            raise ProfileError(f"{source}: is {len(data)} bytes, too big for a profile (at most {MAX_BYTES})")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ProfileError(f"{source}: is not UTF-8 text; a profile is a JSON file written by "
                               "`castellan calibrate`") from None
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ProfileError(f"{source}: is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                               f"{exc.msg}); a profile is a JSON file written by `castellan calibrate`") from None
    obj = _object(data, source, "the top level")
    fmt = obj.get("format")
    if fmt is None:
        raise _fail(source, "format", f"is missing (expected {FORMAT!r})")
    if fmt != FORMAT:
        if isinstance(fmt, str) and fmt.startswith("castellan-profile/"):
            raise _fail(source, "format", f"is {fmt!r}, which this version cannot read (it reads {FORMAT!r}); "
                        "update Castellan Referee or calibrate again")
        raise _fail(source, "format", f"is {fmt!r}, not a Castellan profile (expected {FORMAT!r})")
    _no_extra(obj, {"format", "camera", "pieces", "colours"}, source, "profile")
    prof = Profile(
        CameraProfile.from_json(obj["camera"], source) if obj.get("camera") is not None else None,
        PieceProfile.from_json(obj["pieces"], source) if obj.get("pieces") is not None else None,
        ColourProfile.from_json(obj["colours"], source) if obj.get("colours") is not None else None,
    )
    if prof.camera is None and prof.pieces is None and prof.colours is None:
        raise ProfileError(f"{source}: has none of the sections camera, pieces, colours")
    return prof


def load_profile(path: str | os.PathLike) -> Profile:
    """Read and validate a profile file (what `--profile PATH` gives)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise ProfileError(f"{p}: is {p.stat().st_size} bytes, too big for a profile (at most {MAX_BYTES})")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ProfileError(f"{p}: no such profile file; write one with `castellan calibrate`") from None
    except IsADirectoryError:
        raise ProfileError(f"{p}: is a directory, not a profile file") from None
    except OSError as exc:
        raise ProfileError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    return parse_profile(raw, source=str(p))


def save_profile(profile: Profile, path: str | os.PathLike, *, merge: bool = True) -> Profile:
    """Write `profile` to `path`; with `merge`, sections already in a valid file there are kept
    unless `profile` replaces them. Returns what was written."""
    p = Path(path)
    if merge and p.exists():
        profile = load_profile(p).merged(profile)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(profile.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return profile


def load_profiles(paths: list[str | os.PathLike] | tuple[str | os.PathLike, ...]) -> Profile | None:
    """Load several profile files (`--profile A --profile B`); later files' sections win.
    Returns None for no paths (the pipeline then uses its defaults)."""
    result: Profile | None = None
    for path in paths:
        prof = load_profile(path)
        result = prof if result is None else result.merged(prof)
    return result


def profile_from_setting(value: str | os.PathLike | dict | list | tuple | None) -> Profile | None:
    """A profile from a configuration value (the web app's CASTELLAN_PROFILE, say).

    Accepts None or "" (no profile), a path, several paths joined by os.pathsep (":" on Linux) or
    given as a list (later ones win), or the profile itself as a dict. Raises ProfileError naming
    the file and field, so a server refuses to start with a broken profile instead of ignoring it.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, dict):
        return parse_profile(value, source="profile setting")
    if isinstance(value, (list, tuple)):
        return load_profiles(list(value))
    paths = [p for p in str(value).split(os.pathsep) if p.strip()]
    return load_profiles(paths)
