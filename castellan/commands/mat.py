"""`castellan mat`: write the printable calibration mat as a PDF at true size."""
from __future__ import annotations

import argparse
import sys

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mat",
        help="write the printable calibration mat (PDF)",
        description="Write the ChArUco calibration mat as a PDF at true printed size. Print it at "
                    "100 %% and lay it flat beside or under the castle.",
    )
    parser.add_argument("-o", "--output", required=True, help="PDF file to write, e.g. mat.pdf")
    parser.add_argument("--paper", default="a4", type=str.lower, choices=["a4", "letter", "a3"],
                        help="paper size (default: a4)")
    parser.add_argument("--dpi", type=int, default=300, help="raster resolution of the page (default: 300)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from calibration.mat import mat_layout, write_mat_pdf

    if not str(args.output).lower().endswith(".pdf"):
        print(f"castellan mat: the output {args.output!r} must be a .pdf file", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        size = write_mat_pdf(args.output, args.paper, args.dpi)
    except ValueError as exc:
        print(f"castellan mat: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"castellan mat: cannot write {args.output!r}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lay = mat_layout(args.paper)
    print(f"wrote {args.output}: {args.paper.upper()} page {size[0]:g} x {size[1]:g} mm, board "
          f"{lay.board_mm[0]:g} x {lay.board_mm[1]:g} mm ({lay.square_mm:g} mm squares). "
          "Print at 100 % and check the 100 mm bar.")
    return EXIT_OK
