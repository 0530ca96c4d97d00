"""The photo branch of `castellan score`: read the castle from a photo with vision.read_photo."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2

from .report import reader_notes, score_table

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _overlay_path(args: argparse.Namespace) -> Path:
    if args.overlay:
        return Path(args.overlay)
    if args.debug:
        return Path(args.debug) / "overlay.png"
    # The result always comes with its overlay; by default it goes to the current folder.
    return Path(Path(args.file).stem + ".overlay.png")


def castle_from_photo(path: str, data: bytes, profile=None):
    """The castle read from a photo, for commands that need a castle rather than a score.

    Raises InputError with the reader's advice when the photo is refused or is not a photo."""
    from vision import PhotoError, read_photo

    from .inputs import InputError

    try:
        reading = read_photo(data, profile=profile)
    except PhotoError as e:
        raise InputError(f"{path}: {e}") from None
    if reading.refusal:
        raise InputError(f"{path}: the castle could not be read ({reading.refusal}); "
                         "give its castellan/1 JSON instead")
    return reading.castle


def guess_hint(result: dict) -> str:
    """For a refused reading that still made a castle of the photo: what it is and how to use it."""
    guess = result.get("tentative_castle")
    if not guess:
        return ""
    from vision.pipeline import pieces_to_check

    to_check = pieces_to_check(guess)
    return (f"The reader's unscored guess ({len(guess.get('towers', []))} towers, {len(guess.get('walls', []))} walls, "
            f"{len(guess.get('keeps', []))} keeps; {to_check} marked to check: \"check\", \"towers_to_check\") is "
            "\"tentative_castle\" in --json: "
            "correct it and score it with castellan score CASTLE.json, or in the web app.")


def score_photo(args: argparse.Namespace, data: list[bytes]) -> int:
    """Score one photo, or several photos of one castle read together (vision.several_photos)."""
    from vision import PhotoError
    from vision.several_photos import read_photos

    profile = None
    if getattr(args, "profile", None):
        from calibration.profiles import load_profiles

        try:
            profile = load_profiles(args.profile)
        except (OSError, ValueError) as e:
            print(f"castellan score: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        reading = read_photos(data, profile=profile, debug_dir=args.debug)
    except PhotoError as e:
        where = args.file if len(data) == 1 else ", ".join(args.files)
        print(f"castellan score: {where}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    overlay_path = _overlay_path(args)
    try:
        overlay_path.parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(overlay_path), reading.overlay)
    except OSError as e:
        print(f"castellan score: cannot write the overlay to {overlay_path}: {e}", file=sys.stderr)
        overlay_path = None
    if args.json:
        out = reading.to_json()
        out["overlay"] = str(overlay_path) if overlay_path else None
        print(json.dumps(out, indent=2))
    else:
        if reading.refusal:
            print(f"Not scored: {reading.refusal}")
            print(f"(confidence {reading.confidence:.2f})")
            hint = guess_hint(reading.to_json())
            if hint:
                print(hint)
        else:
            print(score_table(reading.score))
            notes = reader_notes(reading.findings)
            if notes:
                print("\n" + notes)
            print(f"\nRead from the photo{'s' if len(data) > 1 else ''} with confidence {reading.confidence:.2f} "
                  f"in {sum(reading.timings.values()):.2f} s")
        if overlay_path:
            print(f"Overlay: {overlay_path}")
    # A refusal is an unusable photo: the same exit status as other bad input, with advice printed.
    return EXIT_OK if reading.refusal is None else EXIT_BAD_INPUT
