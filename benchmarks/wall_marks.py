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
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from benchmarks.vision_benchmark import best_alignment, photos_with_truth, true_castle

NEAR_MISS = (1, 8)  # wrong walls on a guess a player corrects rather than redraws


def _steps(a: tuple, b: tuple) -> set[tuple]:
    n = abs(b[0] - a[0]) + abs(b[1] - a[1])
    pts = [(a[0] + (b[0] - a[0]) * i // n, a[1] + (b[1] - a[1]) * i // n) for i in range(n + 1)]
    return {tuple(sorted(s)) for s in zip(pts, pts[1:])}


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


def classify_walls(guess: dict, found, truth) -> list[tuple[str, bool, bool, bool]]:
    """Each wall of a guess (its castellan/1 JSON with the reader's marks, and as a Castle) against the true
    Castle: (right | extra | missing, misidentified, marked itself, a doubted tower on it)."""
    al = best_alignment(found, truth)

    def wall_key(w: dict) -> tuple:
        return tuple(sorted((tuple(al.map(tuple(w["from"]))), tuple(al.map(tuple(w["to"]))))))

    true_walls = {tuple(sorted((w.a, w.b))) for w in truth.walls}
    guessed = {wall_key(w): w for w in guess.get("walls", [])}
    true_steps = set().union(*(_steps(*k) for k in true_walls))
    guess_steps = set().union(*(_steps(*k) for k in guessed))
    maybe_absent = {wall_key(w) for w in guess.get("unsure_absent_walls", [])}
    doubted_towers = {tuple(al.map(tuple(t))) for t in guess.get("towers_to_check", []) + guess.get("unsure_absent_towers", [])}

    def at_doubted_tower(k: tuple) -> bool:
        return any(pt in doubted_towers for step in _steps(*k) for pt in step)

    walls = []
    for k, w in guessed.items():
        kind = "right" if k in true_walls else "extra"
        walls.append((kind, kind == "extra" and bool(_steps(*k) & true_steps), bool(w.get("check")), at_doubted_tower(k)))
    for k in true_walls - set(guessed):
        walls.append(("missing", bool(_steps(*k) & guess_steps), bool(_steps(*k) & maybe_absent), at_doubted_tower(k)))
    return walls


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
    args = ap.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
