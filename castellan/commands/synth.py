"""`castellan synth --count N --out DIR`: render a set of synthetic photos of random finished castles.

Each photo comes with its ground truth (JSON) and a piece mask (PNG); DIR/index.json lists them with
the conditions drawn. Needs the optional renderer (`pip install .[synth]`).
"""
from __future__ import annotations

import argparse
import sys

from .inputs import render_size_problem


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("synth", help="render a set of synthetic photos with ground truth",
                              description="Render N photos of random finished 2-, 3- and 4-player castles "
                                          "under random cameras, lights and tables, with ground truth.")
    p.add_argument("--count", type=int, required=True, help="how many photos")
    p.add_argument("--out", required=True, help="folder to write them to (created if missing)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first photo; photo i uses seed + i")
    p.add_argument("--width", type=int, default=1600, help="image width in pixels (default 1600)")
    p.add_argument("--height", type=int, default=1200, help="image height in pixels (default 1200)")
    p.add_argument("--spp", type=int, default=16, help="samples per pixel (default 16; denoised)")
    p.add_argument("--prefix", default="photo", help="file name prefix (default photo)")
    p.add_argument("--min-elevation", type=float, metavar="DEG",
                   help="render only the photos whose camera is at least DEG degrees above the table (the others "
                        "are skipped; each photo keeps its seed and name)")
    p.add_argument("--view", type=int, default=0, metavar="K",
                   help="photograph each scene again from another camera (K = 1, 2, ...), as PREFIX_NNN_vK.jpg: "
                        "the same castles, tables and lights as the photos rendered without it")
    p.add_argument("--start", type=int, default=0, metavar="I",
                   help="leave out the set's photos before photo I (each photo keeps its seed and name): "
                        "two processes render one set with --count N --start N/2 and --count N/2")
    p.add_argument("--no-masks", action="store_true", help="do not write the piece masks")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.count <= 100_000:
        print(f"castellan synth: --count {args.count} is out of range; use 1 to 100000", file=sys.stderr)
        return 2
    if args.min_elevation is not None and not 0 <= args.min_elevation <= 90:
        print(f"castellan synth: --min-elevation {args.min_elevation:g} is not an angle above the table; use 0 to 90",
              file=sys.stderr)
        return 2
    if not 0 <= args.view <= 99:
        print(f"castellan synth: --view {args.view} is out of range; use 0 (the scene's own photo) to 99", file=sys.stderr)
        return 2
    if not 0 <= args.start < args.count:
        print(f"castellan synth: --start {args.start} is out of range; use 0 to --count - 1 ({args.count - 1})", file=sys.stderr)
        return 2
    problem = render_size_problem(args.width, args.height, args.spp)
    if problem:
        print(f"castellan synth: {problem}", file=sys.stderr)
        return 2
    try:
        from synth.backend import RendererUnavailable
        from synth.batch import synthesize
    except ImportError as e:
        print(f"castellan synth: the renderer is not installed ({e}); run `pip install .[synth]`", file=sys.stderr)
        return 1
    try:
        paths = synthesize(args.count, args.out, first_seed=args.seed, width=args.width, height=args.height,
                           spp=args.spp, prefix=args.prefix, masks=not args.no_masks, progress=not args.quiet,
                           min_elevation=args.min_elevation, view=args.view, start=args.start)
    except RendererUnavailable as e:
        print(f"castellan synth: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"castellan synth: cannot write to {args.out} ({e.strerror})", file=sys.stderr)
        return 2
    print(f"wrote {len(paths)} photos with ground truth to {args.out}")
    return 0
