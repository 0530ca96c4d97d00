"""Read several photos of one castle together and compare with reading each photo alone.

    python -m benchmarks.several_photos DIR... [--json out.json] [--jobs N]

The photos of a castle are those whose truth JSON has the same scene seed: `castellan synth --seed S`
and `castellan synth --seed S --view 1` (into another folder, or the same) photograph the same scenes
from two cameras. Each photo is read once with vision.read_photo; each castle's readings are then
combined (vision.several_photos.combine_readings) and the combined answer is compared with the truth.
Printed per castle and in sum: how many photos alone were answered, right and wrong; how many castles
the photos read together answered, right and wrong. Castles with a single photo are left out.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import argparse
import json
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.vision_benchmark import band, photos_with_truth, scores_exactly, true_castle, true_scores


def read_lightly(p: Path):
    """One photo's reading without its images (which the combination does not need), so that it
    travels cheaply between processes."""
    import cv2

    from vision import PhotoError, read_photo

    cv2.setNumThreads(1)
    try:
        reading = read_photo(p.read_bytes())
    except PhotoError:
        return None
    return replace(reading, overlay=np.zeros((1, 1, 3), np.uint8), keeps_found=[])


def outcome(reading, true_score: dict[str, int]) -> dict[str, Any]:
    """answered / right, and whether what was read (answered or not) scores exactly."""
    from vision.several_photos import castle_read

    castle = castle_read(reading) if reading is not None else None
    exact = castle is not None and scores_exactly(castle, true_score)
    answered = reading is not None and reading.refusal is None
    return {"answered": answered, "right": answered and exact, "exact_any": exact,
            "confidence": round(reading.confidence, 3) if reading is not None else 0.0,
            "refusal": None if reading is None else reading.refusal}


def run(folders: list[Path], jobs: int = 1, log=print) -> dict[str, Any]:
    from concurrent.futures import ProcessPoolExecutor

    from vision.several_photos import combine_readings

    photos = [p for f in folders for p in photos_with_truth(f) if not p.stem.endswith("_mask")]
    truths = {p: json.loads(p.with_suffix(".json").read_text()) for p in photos}
    scenes: dict[int, list[Path]] = defaultdict(list)
    for p in photos:
        scenes[truths[p]["conditions"]["seed"]].append(p)
    scenes = {s: sorted(ps, key=lambda p: truths[p].get("view", 0)) for s, ps in scenes.items() if len(ps) > 1}
    todo = [p for ps in scenes.values() for p in ps]
    pool = ProcessPoolExecutor(jobs) if jobs > 1 else None
    try:
        readings = dict(zip(todo, (pool.map if pool else map)(read_lightly, todo)))
    finally:
        if pool:
            pool.shutdown()
    rows = []
    for seed, ps in sorted(scenes.items()):
        truth_json = truths[ps[0]]
        true_score, truth = true_scores(truth_json), true_castle(truth_json)
        alone = [dict(outcome(readings[p], true_score), photo=p.name, view=truths[p].get("view", 0),
                      bands=band(truths[p].get("conditions", {}))) for p in ps]
        read = [readings[p] for p in ps if readings[p] is not None]
        together = outcome(combine_readings(read) if read else None, true_score)
        rows.append({"seed": seed, "photos": alone, "together": together,
                     "true_pieces": len(truth.towers) + len(truth.walls)})  # grey pieces
        log(f"{seed}: alone {[(a['answered'], a['right']) for a in alone]} together "
            f"answered={together['answered']} right={together['right']} conf={together['confidence']}")
    return {"castles": len(rows), "photos": len(todo), "summary": summarise(rows), "rows": rows}


def summarise(rows: list[dict]) -> dict[str, Any]:
    def tally(outcomes: list[dict]) -> dict[str, int]:
        return {"answered": sum(o["answered"] for o in outcomes), "right": sum(o["right"] for o in outcomes),
                "wrong": sum(o["answered"] and not o["right"] for o in outcomes),
                "exact_any": sum(o["exact_any"] for o in outcomes), "of": len(outcomes)}

    # A player who scores each photo alone and takes the first answer (the most confident when both answer).
    first_answer = []
    for r in rows:
        answered = [a for a in r["photos"] if a["answered"]]
        first_answer.append(max(answered, key=lambda a: a["confidence"]) if answered
                            else {"answered": False, "right": False, "exact_any": any(a["exact_any"] for a in r["photos"])})
    return {"photos_alone": tally([a for r in rows for a in r["photos"]]),
            "castles_by_their_best_photo_alone": tally(first_answer),
            "castles_by_their_photos_together": tally([r["together"] for r in rows])}


def print_table(result: dict[str, Any], out=sys.stdout) -> None:
    s = result["summary"]
    print(f"{result['castles']} castles, {result['photos']} photos", file=out)
    print(f"{'':44} {'of':>5} {'answered':>9} {'right':>6} {'wrong':>6} {'exact any':>10}", file=out)
    for label, key in (("each photo alone", "photos_alone"),
                       ("a castle by its most confident answer alone", "castles_by_their_best_photo_alone"),
                       ("a castle by its photos read together", "castles_by_their_photos_together")):
        t = s[key]
        print(f"{label:44} {t['of']:>5} {t['answered']:>9} {t['right']:>6} {t['wrong']:>6} {t['exact_any']:>10}", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="folders of rendered photos with truth (views of the same scenes)")
    ap.add_argument("--json", type=Path, help="write the rows and summary here")
    ap.add_argument("--jobs", type=int, default=1, help="photos read at a time, one core each")
    ap.add_argument("--quiet", action="store_true", help="no line per castle")
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"several_photos: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    result = run(args.folders, jobs=args.jobs, log=(lambda *a, **k: None) if args.quiet else print)
    if not result["castles"]:
        print("several_photos: no castle has two or more photos here (render views with `castellan synth --view 1`)",
              file=sys.stderr)
        return 2
    print_table(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
