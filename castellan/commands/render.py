"""`castellan render CASTLE.json -o photo.jpg`: a synthetic phone photo of a castle, with ground truth.

Needs the optional renderer (`pip install .[synth]`). Writes photo.jpg, photo.json (ground truth)
and, with --mask, photo_mask.png (per pixel: the mask_id of the piece seen there).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .inputs import InputError, read_castle_file, render_size_problem


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("render", help="render a castellan/1 castle as a synthetic phone photo",
                              description="Render a castellan/1 castle as a phone-like photo (Mitsuba 3), "
                                          "with its ground truth written beside it as JSON.")
    p.add_argument("castle", help="castellan/1 JSON file")
    p.add_argument("-o", "--output", required=True, help="the photo to write (.jpg); the ground truth goes to .json beside it")
    p.add_argument("--seed", type=int, default=0, help="seed for camera, lights, table, noise (default 0)")
    p.add_argument("--width", type=int, default=1600, help="image width in pixels (default 1600)")
    p.add_argument("--height", type=int, default=1200, help="image height in pixels (default 1200)")
    p.add_argument("--spp", type=int, default=16, help="samples per pixel (default 16; denoised)")
    p.add_argument("--mask", action="store_true", help="also write PHOTO_mask.png with each piece's pixels")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix.lower() not in (".jpg", ".jpeg"):
        print(f"castellan render: {args.output}: the photo is written as JPEG; give a .jpg name", file=sys.stderr)
        return 2
    problem = render_size_problem(args.width, args.height, args.spp)
    if problem:
        print(f"castellan render: {problem}", file=sys.stderr)
        return 2
    try:
        castle = read_castle_file(args.castle)
    except InputError as e:
        print(f"castellan render: {e}", file=sys.stderr)
        return 2
    if not castle.towers and not castle.walls:
        print(f"castellan render: {args.castle}: the castle has no towers or walls; nothing to render",
              file=sys.stderr)
        return 2
    try:
        from synth.backend import RendererUnavailable
        from synth.render import render_jpeg, save_photo
    except ImportError as e:
        print(f"castellan render: the renderer is not installed ({e}); run `pip install .[synth]`", file=sys.stderr)
        return 1
    try:
        jpeg, truth, labels = render_jpeg(castle, args.seed, args.width, args.height, args.spp)
    except RendererUnavailable as e:
        print(f"castellan render: {e}", file=sys.stderr)
        return 1
    try:
        path = save_photo(out, jpeg, truth, labels if args.mask else None)
    except OSError as e:
        print(f"castellan render: cannot write {args.output} ({e.strerror})", file=sys.stderr)
        return 2
    t = truth["renderer"]
    print(f"wrote {path} and {path.with_suffix('.json').name} "
          f"({args.width}x{args.height}, {args.spp} spp, {t['variant']}, {t['timings_s']['total_s']:.1f} s)")
    return 0
