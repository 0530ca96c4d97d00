"""The web app's only door to the rules engine (`scoring`) and the photo reader (`vision`).

Both are imported when first needed, so the app starts (and serves its pages, stored results and
OpenAPI document) even on a server where one of them is missing; a request that needs it then gets a
clear 503 instead of a crash.
"""
from __future__ import annotations

import importlib
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

COLOURS = ("red", "blue", "yellow", "green")
log = logging.getLogger(__name__)


class EngineUnavailable(RuntimeError):
    """The rules engine or the photo reader is not installed on this server."""


class BadCastle(ValueError):
    """A castle that is not valid castellan/1; the message names the offending entry."""


class BadPhoto(ValueError):
    """An upload that is not a readable photo; the message says what to do."""

    status = 400


class PhotoTooLarge(BadPhoto):
    status = 413


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        what = "rules engine" if name == "scoring" else "photo reader"
        raise EngineUnavailable(f"the {what} ({name}) is not installed on this server: {exc}") from exc


def parse(castle: dict | str):
    scoring = _module("scoring")
    try:
        return scoring.parse_castle(castle)
    except ValueError as exc:  # CastleFormatError is a ValueError naming the entry
        raise BadCastle(str(exc)) from exc
    except (TypeError, KeyError, AttributeError) as exc:
        # A malformed value the engine did not anticipate is still the caller's bad input.
        raise BadCastle(f"not a valid castellan/1 castle: {exc}") from exc


def with_players(castle: dict, players: list[str] | None) -> dict:
    """The castle with the players in play recorded, so a player without a courtyard scores 0."""
    if not players:
        return castle
    merged = dict(castle)
    known = list(merged.get("players") or [])
    merged["players"] = known + [p for p in players if p not in known]
    return merged


def score(castle: dict) -> dict:
    """castellan-score/1 for a castellan/1 dict. Raises BadCastle or EngineUnavailable."""
    return score_parsed(parse(castle))


def score_parsed(castle: Any) -> dict:
    """castellan-score/1 of a castle that `parse` returned."""
    return _module("scoring").score_castle(castle).to_json()


def check_move(before: Any, after: Any, player: str) -> dict:
    """castellan-move/1 of two castles that `parse` returned."""
    return _module("scoring").check_move(before, after, player).to_json()


@dataclass
class Reading:
    """What the photo reader made of a photo, in the form the app stores."""

    castle: dict | None
    refusal: str | None
    confidence: float | None
    overlay_jpeg: bytes | None
    info: dict[str, Any]  # reading JSON: confidence, refusal, timings, findings


# Reading a photo takes seconds of CPU and a few hundred MB for a 48-megapixel photo. The server
# runs several threads; letting all of them read at once would only share the cores and multiply
# the memory, so at most this many read at a time (the rest wait their turn).
_readers = threading.BoundedSemaphore(max(1, min(4, os.cpu_count() or 2)))


def read_photo(data: bytes | list[bytes], profile: Any = None) -> Reading:
    """Read a castle from photo bytes (or from several photos of one castle, read together), with the
    calibration profile if one is configured. Raises BadPhoto (unreadable upload) or EngineUnavailable."""
    vision = _module("vision")
    photos = data if isinstance(data, list) else [data]
    try:
        with _readers:
            if len(photos) == 1:
                reading = vision.read_photo(photos[0], profile=profile)
            else:
                reading = _module("vision.several_photos").read_photos(photos, profile=profile)
    except vision.PhotoError as exc:
        raise BadPhoto(str(exc)) from exc
    except Exception as exc:  # a fault in the reader must not cost the user their upload
        log.exception("the photo reader failed")
        return Reading(castle=None, confidence=None, overlay_jpeg=None,
                       info={"reader_error": f"{type(exc).__name__}: {exc}"[:500]},
                       refusal="The photo reader failed on this photo (the fault is logged). "
                               "Enter the castle on the drawing below, or try another photo.")
    info: dict[str, Any] = {}
    try:
        full = reading.to_json()
        info = {k: full[k] for k in ("confidence", "refusal", "timings", "rectification", "tentative_castle") if k in full}
    except Exception:  # the reading itself is still usable without its JSON summary
        info = {"confidence": getattr(reading, "confidence", None), "refusal": getattr(reading, "refusal", None)}
    info["self_check"] = [_plain(f) for f in (getattr(reading, "findings", None) or [])]
    castle = reading.castle.to_json() if reading.castle is not None else None
    refusal = reading.refusal
    if castle is None and not refusal:
        refusal = "The castle could not be read from this photo. Take it again from higher up, with the whole castle in view."
    overlay = None
    if getattr(reading, "overlay", None) is not None:
        overlay = encode_jpeg(reading.overlay)
    return Reading(castle=castle, refusal=refusal, confidence=getattr(reading, "confidence", None),
                   overlay_jpeg=overlay, info=info)


def _plain(finding: Any) -> Any:
    if isinstance(finding, (dict, str, int, float)) or finding is None:
        return finding
    if hasattr(finding, "to_json"):
        return finding.to_json()
    return str(finding)


def encode_jpeg(bgr, max_side: int = 1600) -> bytes:
    """A BGR image as a JPEG small enough to show on a phone."""
    import cv2

    h, w = bgr.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    if scale < 1.0:
        bgr = cv2.resize(bgr, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 85])
    if not ok:
        raise RuntimeError("could not encode the overlay image")
    return buf.tobytes()
