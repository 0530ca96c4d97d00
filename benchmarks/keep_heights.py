"""How often a keep's height (single or Double Keep) is read wrong, by the keep's own confidence.

    python -m benchmarks.keep_heights DIR... [--results JSON... --min-confidence 0.3] [--json out.json]

Reads every photo with ground truth in the folders (or, with --results, one vision_benchmark JSON per
folder in the same order, only the photos that run read at --min-confidence or more, which saves most of
the time), matches the found keeps to the true ones as benchmarks.vision_benchmark does, and tallies
right and wrong heights per confidence band. The reading's confidence weighs each keep in doubt (vision.confidence.assess); this says
what such a keep's doubt is really worth.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.vision_benchmark import align, match_keeps, photos_with_truth, piece_sets, true_castle
from vision.keeps import HEIGHT_CAP
from vision.confidence import KEEP_DOUBT

BANDS = (f"{HEIGHT_CAP} or less", f"{HEIGHT_CAP}-{KEEP_DOUBT}", f"{KEEP_DOUBT}-0.8", "0.8 or more")


def band_of(confidence: float) -> str:
    """The confidence band of a keep (HEIGHT_CAP is the cap the reader puts on a keep whose height is in doubt)."""
    if confidence <= HEIGHT_CAP:
        return BANDS[0]
    return BANDS[1] if confidence < KEEP_DOUBT else (BANDS[2] if confidence < 0.8 else BANDS[3])


def keep_heights(photo: Path) -> list[dict[str, Any]]:
    """One row per found keep matched to a true one: its confidence and whether its height is right."""
    from vision import read_photo

    truth = true_castle(json.loads(photo.with_suffix(".json").read_text()))
    reading = read_photo(photo.read_bytes())
    castle = reading.castle or reading.tentative_castle
    if castle is None:
        return []
    aligned = align(castle, truth)
    grey_right = piece_sets(aligned) == piece_sets(truth)
    rows = []
    for i, j in match_keeps(aligned, truth):
        found = reading.keeps_found[i]
        confidence = round(found.confidence, 3)
        rows.append({"photo": photo.name, "reading_confidence": round(reading.confidence, 3),
                     "keep_confidence": confidence, "doubt": found.doubt or ("outline" if confidence < KEEP_DOUBT else ""),
                     "colour": found.colour, "stacked": round(found.stacked, 3), "fill": round(found.fill, 3),
                     "double_fill": round(found.double_fill, 3), "lean": round(found.lean, 2), "iou": round(found.iou, 3),
                     "height_by_size": found.height_by_size, "grey_right": grey_right,
                     "read_double": aligned.keeps[i].double, "true_double": truth.keeps[j].double,
                     "height_right": aligned.keeps[i].double == truth.keeps[j].double})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--results", nargs="*", type=Path, default=[],
                    help="one vision_benchmark JSON per folder: read only the photos it read at --min-confidence")
    ap.add_argument("--min-confidence", type=float, default=0.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()] + [str(f) for f in args.results if not f.is_file()]
    if missing:
        print(f"keep_heights: not found: {', '.join(missing)} (give folders of photos with their truth JSON beside them, "
              "and vision_benchmark JSON files)", file=sys.stderr)
        return 2
    import cv2

    cv2.setNumThreads(1)  # as the vision benchmark reads: one core per photo
    if args.results and len(args.results) != len(args.folders):
        ap.error(f"--results needs one JSON per folder: {len(args.folders)} folders, {len(args.results)} JSONs")
    rows = []
    for n, folder in enumerate(args.folders):
        chosen = None
        if args.results:
            chosen = {r["photo"] for r in json.loads(args.results[n].read_text())["rows"] if r["confidence"] >= args.min_confidence}
        for p in photos_with_truth(folder):
            if chosen is None or p.name in chosen:
                rows += keep_heights(p)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        tally[band_of(r["keep_confidence"])][0 if r["height_right"] else 1] += 1
    print(f"{'keep confidence':<16}{'right':>7}{'wrong':>7}")
    for name in BANDS:
        right, wrong = tally[name]
        print(f"{name:<16}{right:>7}{wrong:>7}")
    by_doubt: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["keep_confidence"] < KEEP_DOUBT:
            by_doubt[r["doubt"]][0 if r["height_right"] else 1] += 1
    print(f"\n{f'keeps below {KEEP_DOUBT}, why':<36}{'right':>7}{'wrong':>7}")
    for name, (right, wrong) in sorted(by_doubt.items()):
        print(f"{name:<36}{right:>7}{wrong:>7}")
    if args.json:
        args.json.write_text(json.dumps({"bands": {n: dict(zip(("right", "wrong"), tally[n])) for n in BANDS},
                                         f"below_{KEEP_DOUBT}_by_doubt": {n: dict(zip(("right", "wrong"), v)) for n, v in by_doubt.items()},
                                         "keeps": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
