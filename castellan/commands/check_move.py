"""`castellan check-move BEFORE AFTER --player COLOUR`: a judge's check of one turn."""
from __future__ import annotations

import argparse
import json
import sys

from scoring import COLOURS, check_move

from .inputs import InputError, castle_from_bytes, looks_like_json, read_bytes
from .report import move_table


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("check-move", help="check one player's turn between two castles",
                              description="Say what a player added between two castellan/1 castles and whether the turn was legal.")
    p.add_argument("before", help="the castle before the turn: castellan/1 JSON or a photo")
    p.add_argument("after", help="the castle after the turn: castellan/1 JSON or a photo")
    p.add_argument("--player", required=True, choices=COLOURS, help="the colour who moved")
    p.add_argument("--json", action="store_true", help="print castellan-move/1 JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        before, after = read_state(args.before), read_state(args.after)
    except InputError as e:
        print(f"castellan check-move: {e}", file=sys.stderr)
        return 2
    check = check_move(before, after, args.player)
    print(json.dumps(check.to_json(), indent=2) if args.json else move_table(check))
    return 0


def read_state(path: str):
    """A castle from castellan/1 JSON, or read from a photo (refused photos are bad input)."""
    data = read_bytes(path)
    if looks_like_json(path, data):
        return castle_from_bytes(path, data)
    from .photo import castle_from_photo  # the vision stack loads only for photos

    return castle_from_photo(path, data)
