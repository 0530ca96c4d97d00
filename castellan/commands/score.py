"""`castellan score FILE`: score a castellan/1 castle or a photo of a finished game (or several photos of one)."""
from __future__ import annotations

import argparse
import json
import sys

from scoring import score_castle

from .inputs import InputError, castle_from_bytes, looks_like_json, read_bytes
from .report import score_table


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("score", help="score a castle (castellan/1 JSON) or a photo of one",
                              description="Score a finished castle from a castellan/1 JSON file or a photo.")
    p.add_argument("files", nargs="+", metavar="file",
                   help="castellan/1 JSON file, or a photo (JPEG, PNG, HEIC); several photos of one castle, taken "
                        "from different sides or heights, are read together")
    p.add_argument("--json", action="store_true", help="print castellan-score/1 JSON instead of a table")
    p.add_argument("--debug", metavar="DIR", help="(photos) write the intermediate images to DIR")
    p.add_argument("--overlay", metavar="FILE", help="(photos) write the overlay image to FILE")
    p.add_argument("--profile", metavar="FILE", action="append", default=[],
                   help="(photos) a calibration profile JSON; may be given more than once")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.file = args.files[0]
    try:
        data = [read_bytes(f) for f in args.files]
        castles = [f for f, d in zip(args.files, data) if looks_like_json(f, d)]
        if castles and len(args.files) > 1:
            raise InputError(f"{castles[0]}: give one castellan/1 file on its own (several files are read as photos of one castle)")
        if castles:
            result = score_castle(castle_from_bytes(args.file, data[0]))
            print(json.dumps(result.to_json(), indent=2) if args.json else score_table(result))
            return 0
        return _score_photo(args, data)
    except InputError as e:
        print(f"castellan score: {e}", file=sys.stderr)
        return 2


def _score_photo(args: argparse.Namespace, data: list[bytes]) -> int:
    from .photo import score_photo  # the vision stack loads only for photos

    return score_photo(args, data)
