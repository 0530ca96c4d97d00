"""What a calibration profile's piece and colour sections change in a reading (the camera section is
applied when the photo is decoded, see pipeline._apply_profile).

- pieces: the set's measured sizes in lattice steps (pitch = tower side + short wall length) are the
  sizes the reconstruction starts from (it still tries +-7 % around them), and when the table plane is
  in millimetres (the mat is in the photo) the lattice pitch is looked for near the measured pitch
  instead of anywhere within +-25 % of 54 mm.
- colours: the keeps' measured colours replace the typical hue centres that label keep pixels.

A profile without these sections (or no profile) gives the defaults: nominal pieces, typical hues.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from vision.reconstruct import KEEP_H, KEEP_HALF, TOWER_H, TOWER_HALF, WALL_H, WALL_HALF, Dims

# A measured pitch is good to a millimetre or two; the mat's scale in the photo to a few per cent.
PITCH_TOLERANCE = 0.08
NOMINAL_WALL_TOP_MM = 30.0


@dataclass(frozen=True)
class ReadingSettings:
    """Everything besides the camera that a profile sets for one reading."""

    dims: Dims = field(default_factory=Dims)
    pitch_mm: float | None = None  # the set's lattice pitch (mm), when measured
    wall_top_mm: float = NOMINAL_WALL_TOP_MM  # height of the wall tops, where the lattice is refitted
    keep_lab: dict[str, tuple[float, float, float]] | None = None  # measured keep colours (CIELAB)

    def pitch_mm_range(self, default: tuple[float, float]) -> tuple[float, float]:
        if self.pitch_mm is None:
            return default
        return (self.pitch_mm * (1 - PITCH_TOLERANCE), self.pitch_mm * (1 + PITCH_TOLERANCE))


def dims_from_pieces(pieces: Any) -> Dims:
    """Piece sizes in lattice steps from a calibration.profiles.PieceProfile (sizes in mm).

    Heights not measured keep their nominal share of the pitch. Raises calibration.profiles.ProfileError
    naming the field when the sizes cannot be one Castellan set.
    """
    pieces.check_proportions()
    pitch = pieces.lattice_pitch_mm

    def steps(mm: float | None, nominal: float) -> float:
        return nominal if mm is None else mm / pitch

    return Dims(
        tower_half=steps(pieces.tower.footprint_mm[0] / 2, TOWER_HALF),
        tower_h=steps(pieces.tower.height_mm, TOWER_H),
        wall_half=steps(pieces.short_wall.footprint_mm[1] / 2, WALL_HALF),
        wall_h=steps(pieces.short_wall.height_mm, WALL_H),
        keep_half=steps(pieces.keep.footprint_mm[0] / 2, KEEP_HALF),
        keep_h=steps(pieces.keep.height_mm, KEEP_H),
    )


def settings_from_profile(profile: Any) -> ReadingSettings:
    """The reading settings a calibration.profiles.Profile gives (None: the defaults)."""
    pieces = getattr(profile, "pieces", None)
    colours = getattr(profile, "colours", None)
    settings = ReadingSettings()
    if pieces is not None:
        dims, pitch = dims_from_pieces(pieces), pieces.lattice_pitch_mm
        settings = replace(settings, dims=dims, pitch_mm=pitch, wall_top_mm=dims.wall_h * pitch)
    if colours is not None and colours.keeps:
        settings = replace(settings, keep_lab={name: tuple(kc.lab) for name, kc in colours.keeps.items()})
    return settings
