"""Which of a refused guess's wrong walls the result page points the player at.

    python -m benchmarks.wall_marks DIR... [--jobs 2] [--json out.json]

Reads every photo with ground truth in the folders; for each refused reading's guess (`tentative_castle`)
aligned to the truth as benchmarks.vision_benchmark aligns it, every wrong wall is sorted three ways: extra
(in the guess, not the truth) or missing; misidentified (it shares a lattice step with a wall of the other
side: a long wall read as two short walls, two short walls read as a long one, a long wall a step off) or
bare; and how the page marks it: the wall itself (an extra wall marked `check`, a missing one with a step
among `unsure_absent_walls`), only a doubted tower on it (`towers_to_check` or `unsure_absent_towers` at
one of its lattice points: whether a long wall is two short walls is the decision about the tower at its
middle), or nothing. Right walls are counted the same way, so the price of a mark is on the table too. The
table is given for all refused guesses and for the near misses (1 to 8 wrong walls), which are the guesses a
player corrects rather than redraws.

    python -m benchmarks.wall_marks --mixups RESULTS.json...

counts, from vision_benchmark JSONs, the long walls the refused near misses (1-12 grey pieces wrong) read
as their two halves with a tower between, or the other way round: each a single tap in the editor.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from benchmarks.vision_benchmark import classify_walls, photos_with_truth, true_castle

NEAR_MISS = (1, 8)  # wrong walls on a guess a player corrects rather than redraws


def wall_marks(p: Path) -> dict[str, Any] | None:
    """One refused photo's walls as classify_walls sorts them (None when the photo was answered or unread)."""
    import cv2

    from vision import PhotoError, read_photo

    cv2.setNumThreads(1)
    truth = true_castle(json.loads(p.with_suffix(".json").read_text()))
    try:
        reading = read_photo(p.read_bytes())
    except PhotoError:
        return None
    if reading.refusal is None or reading.tentative_castle is None:
        return None
    guess = reading.to_json()["tentative_castle"]
    return {"photo": p.name, "walls": classify_walls(guess, reading.tentative_castle, truth)}


def long_wall_mixups(grey_errors: dict) -> int:
    """How many long walls a reading (a vision_benchmark row's `grey_errors`) mistook for its two short
    halves and the tower between them, or the other way round."""
    def listed(kind: str, which: str) -> set:
        found = grey_errors.get(kind, {}).get(which, [])
        return {tuple(t) for t in found} if kind == "tower" else {tuple(sorted(map(tuple, w))) for w in found}

    mixups = 0
    for long_side, halves_side in (("missing", "extra"), ("extra", "missing")):
        shorts, towers = listed("short", halves_side), listed("tower", halves_side)
        for a, b in listed("long", long_side):
            m = ((a[0] + b[0]) // 2, (a[1] + b[1]) // 2)
            mixups += tuple(sorted((a, m))) in shorts and tuple(sorted((m, b))) in shorts and m in towers
    return mixups


def tally(rows: list[dict]) -> dict[str, int]:
    out: Counter = Counter()
    for r in rows:
        for kind, misidentified, marked, at_tower in r["walls"]:
            how = "wall marked" if marked else ("doubted tower on it" if at_tower else "unmarked")
            what = kind if kind == "right" else f"{kind}, {'misidentified' if misidentified else 'bare'}"
            out[f"{what}: {how}"] += 1
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--mixups", action="store_true", help="the arguments are vision_benchmark JSONs: count long-wall mix-ups")
    args = ap.parse_args(argv)
    if args.mixups:
        return _print_mixups(args.folders)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"wall_marks: not found: {', '.join(missing)} (give folders of photos with their truth JSON beside them)",
              file=sys.stderr)
        return 2
    photos = [p for folder in args.folders for p in photos_with_truth(folder)]
    with Pool(max(1, args.jobs)) as pool:
        rows = [r for r in pool.imap(wall_marks, photos, chunksize=2) if r is not None]
    wrong = lambda r: sum(1 for w in r["walls"] if w[0] != "right")  # noqa: E731
    near = [r for r in rows if NEAR_MISS[0] <= wrong(r) <= NEAR_MISS[1]]
    result = {"photos": len(photos), "refused_guesses": len(rows), "near_misses": len(near),
              "all_refused": tally(rows), "near_miss": tally(near), "rows": rows}
    print(f"{len(photos)} photos, {len(rows)} refused guesses, {len(near)} with {NEAR_MISS[0]}-{NEAR_MISS[1]} wrong walls")
    print(f"{'wall':<48}{'all refused':>12}{'near misses':>12}")
    for key in sorted(set(result["all_refused"]) | set(result["near_miss"])):
        print(f"{key:<48}{result['all_refused'].get(key, 0):>12}{result['near_miss'].get(key, 0):>12}")
    if args.json:
        args.json.write_text(json.dumps(result, separators=(",", ":")) + "\n")  # a row per photo: compact
    return 0


def _print_mixups(results: list[Path]) -> int:
    missing = [str(f) for f in results if not f.is_file()]
    if missing:
        print(f"wall_marks: not found: {', '.join(missing)} (give vision_benchmark JSON files)", file=sys.stderr)
        return 2
    guesses = wrong = mixups = 0
    for f in results:
        for row in json.loads(f.read_text())["rows"]:
            errors = row.get("grey_errors")
            n = sum(len(v) for kind in (errors or {}).values() for v in kind.values())
            if row.get("refused") and errors is not None and 1 <= n <= 12:
                guesses, wrong, mixups = guesses + 1, wrong + n, mixups + long_wall_mixups(errors)
    print(f"{guesses} refused guesses with 1-12 grey pieces wrong: {wrong} wrong, {4 * mixups} of them in {mixups} "
          "long walls read as their halves and the tower between (or the other way round)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
