"""How far a reading moves when the focal length it is given moves by a per cent or so.

    python -m benchmarks.focal_sensitivity DIR... [--steps 0.99 1.01] [--json out.json] [--jobs N]

A phone's EXIF focal length, a camera profile and the truth differ by about a per cent. Each photo with an EXIF
focal length is read as it comes and again with a camera profile whose focal length is the EXIF one times each
step (principal point at the centre; photos without one are read once, since the reader then searches the focal
length itself). Printed per elevation band: how many perturbed readings moved their grey pieces by more than a
tenth (Jaccard of towers and walls against the truth), and how answers and exact scores changed. A reading that a
per cent of focal length turns over is one whose lattice or pose was balanced between two fits.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import argparse
import json
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from benchmarks.vision_benchmark import (band, compare, grey_pieces_right, photos_with_truth, scores_exactly, true_castle,
                                         true_scores)

MOVED = 0.1  # a change of the grey pieces' Jaccard this large counts as the reading having moved


def _outcome(reading, truth, true_score: dict[str, int]) -> dict[str, Any]:
    castle = reading.castle or reading.tentative_castle
    if castle is None:
        return {"confidence": round(reading.confidence, 3), "jaccard": 0.0, "exact": False, "answered": False}
    right, total = grey_pieces_right(compare(castle, truth))
    return {"confidence": round(reading.confidence, 3), "jaccard": round(right / max(1, total), 3),
            "exact": scores_exactly(castle, true_score), "answered": reading.refusal is None}


def read_with_steps(args: tuple[Path, tuple[float, ...]]) -> dict[str, Any]:
    """One photo read as it comes and with its EXIF focal length times each step."""
    import cv2

    from calibration.profiles import CameraProfile, Profile
    from vision import PhotoError, read_photo
    from vision.decode import decode_photo

    cv2.setNumThreads(1)
    p, steps = args
    truth_json = json.loads(p.with_suffix(".json").read_text())
    truth, true_score = true_castle(truth_json), true_scores(truth_json)
    data = p.read_bytes()
    row: dict[str, Any] = {"photo": p.name, "bands": band(truth_json.get("conditions", {})), "readings": {}}
    try:
        decoded = decode_photo(data)
    except PhotoError as exc:
        row["error"] = str(exc)
        return row
    focal = decoded.focal_px
    row["exif_focal_px"] = focal
    h, w = decoded.bgr.shape[:2]
    for step in (1.0,) + (steps if focal is not None else ()):
        profile = None if step == 1.0 else Profile(camera=CameraProfile((w, h), (focal * step, focal * step),
                                                                        ((w - 1) / 2, (h - 1) / 2)))
        try:
            row["readings"][str(step)] = _outcome(read_photo(data, profile=profile), truth, true_score)
        except PhotoError as exc:
            row["readings"][str(step)] = {"error": str(exc), "jaccard": 0.0, "exact": False, "answered": False}
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per elevation band: perturbed readings, how many moved, and the answers and exact scores gained and lost."""
    by_band: dict[str, Counter] = {}
    for row in rows:
        base = row["readings"].get("1.0")
        if base is None:
            continue
        c = by_band.setdefault(row["bands"]["elevation"], Counter())
        c["photos"] += 1
        for step, other in row["readings"].items():
            if step == "1.0":
                continue
            c["perturbed"] += 1
            c["moved"] += abs(other["jaccard"] - base["jaccard"]) > MOVED
            c["exact_gained"] += other["exact"] and not base["exact"]
            c["exact_lost"] += base["exact"] and not other["exact"]
            c["answer_gained"] += other["answered"] and not base["answered"]
            c["answer_lost"] += base["answered"] and not other["answered"]
            c["answered_wrong"] += other["answered"] and not other["exact"]
    total = sum(by_band.values(), Counter())
    return {"bands": {b: dict(c) for b, c in sorted(by_band.items())}, "all": dict(total)}


def print_table(summary: dict[str, Any], out=sys.stdout) -> None:
    cols = ("photos", "perturbed", "moved", "exact_gained", "exact_lost", "answer_gained", "answer_lost", "answered_wrong")
    print(f"{'elevation':<10}" + "".join(f"{c:>15}" for c in cols), file=out)
    for name, c in list(summary["bands"].items()) + [("all", summary["all"])]:
        print(f"{name:<10}" + "".join(f"{c.get(k, 0):>15}" for k in cols), file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.focal_sensitivity", description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path, help="folders of rendered photos with truth")
    ap.add_argument("--steps", nargs="+", type=float, default=[0.99, 1.01], help="factors on the EXIF focal length")
    ap.add_argument("--json", type=Path, help="write the rows and summary here")
    ap.add_argument("--jobs", type=int, default=1, help="photos read at a time, one core each")
    args = ap.parse_args(argv)
    missing = [f for f in args.folders if not f.is_dir()]
    if missing:
        print(f"{missing[0]}: not a folder", file=sys.stderr)
        return 2
    photos = [p for folder in args.folders for p in photos_with_truth(folder)]
    work = [(p, tuple(args.steps)) for p in photos]
    if args.jobs > 1:
        with Pool(args.jobs) as pool:
            rows = list(pool.imap(read_with_steps, work, chunksize=2))
    else:
        rows = [read_with_steps(w) for w in work]
    summary = summarise(rows)
    print_table(summary)
    if args.json:
        args.json.write_text(json.dumps({"steps": args.steps, "summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
