"""Castellan Referee's photo reader: `read_photo(bytes) -> PhotoReading` (see docs/HELPERS.md).

The pipeline (vision.pipeline) runs decode -> masks -> table plane and camera pose -> lattice ->
pieces -> keeps -> castle -> self-check and confidence -> overlay; each stage is its own module.
"""
from vision.errors import PhotoError
from vision.confidence import CONFIDENCE_THRESHOLD
from vision.pipeline import PhotoReading, read_photo

__all__ = ["PhotoError", "PhotoReading", "read_photo", "CONFIDENCE_THRESHOLD"]
