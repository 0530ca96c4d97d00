"""Score a folder of photos with ground truth beside them and report accuracy per condition band.

    python -m benchmarks.vision_benchmark DIR [--json out.json] [--limit N] [--jobs N]

Each photo X.jpg (or .png/.heic) needs X.json with at least a castellan/1 "castle" (the renderer's
ground truth also gives "conditions": elevation, light, table, mat). A reconstruction is compared with
the truth after the best of the 8 lattice symmetries and a translation (castellan/1 leaves origin and
orientation free), so piece precision/recall count real misreads only.

A candidate pixel model is benchmarked with CASTELLAN_PIXEL_MODEL=PATH in the environment (the
result names the model it read with). `--truth-masks` reads with the renderer's per-pixel truth
(X_mask.png) in place of the pixel model: what the later stages make of perfect grey and keep pixels,
the ceiling that better masks can reach.
"""
from __future__ import annotations

import os

# The target is seconds per photo on one core: numpy's BLAS must not spread over several (set before
# numpy is loaded, also for the worker processes).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from scoring.align import SYMMETRIES, Alignment

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".heic")
HIGH_CONFIDENCE = 0.8


def piece_sets(castle) -> dict[str, set]:
    """The grey pieces by kind (towers, short and long walls), in lattice coordinates."""
    return {
        "tower": {tuple(t) for t in castle.towers},
        "short": {(w.a, w.b) for w in castle.walls if w.length == 1},
        "long": {(w.a, w.b) for w in castle.walls if w.length == 2},
    }


def _agreement(moved, truth) -> tuple[int, int, int]:
    """Matching towers, walls and keeps (same colour within half a step) of two castles."""
    keeps = sum(any(k.colour == q.colour and abs(k.at[0] - q.at[0]) + abs(k.at[1] - q.at[1]) < 0.6 for q in truth.keeps)
                for k in moved.keeps)
    return len(set(moved.towers) & set(truth.towers)), len(set(moved.walls) & set(truth.walls)), keeps


def align(found, truth):
    """The found castle moved onto the truth's lattice frame by the symmetry and shift that match most."""
    return best_alignment(found, truth).apply(found)


def best_alignment(found, truth) -> Alignment:
    """The symmetry and shift that carry the found castle onto the truth's lattice frame matching most.

    Towers vote for the shift (as in scoring.align); walls and keeps break ties (a symmetric castle has
    several tower fits, and here the keeps tell them apart).
    """
    if not found.towers or not truth.towers:
        return Alignment()
    best, best_key = Alignment(), None
    for turns, mirrored in SYMMETRIES:
        turned = Alignment(turns, mirrored)
        votes = Counter((q[0] - p[0], q[1] - p[1]) for p in map(turned.map, found.towers) for q in truth.towers)
        top = max(votes.values())
        for d, n in votes.items():
            if n < top:
                continue
            cand = Alignment(turns, mirrored, d)
            key = _agreement(cand.apply(found), truth)
            if best_key is None or key > best_key:
                best, best_key = cand, key
    return best


def wall_steps(a: tuple, b: tuple) -> set[tuple]:
    """The unit lattice steps of the wall from a to b (each step's two points sorted)."""
    n = abs(b[0] - a[0]) + abs(b[1] - a[1])
    pts = [(a[0] + (b[0] - a[0]) * i // n, a[1] + (b[1] - a[1]) * i // n) for i in range(n + 1)]
    return {tuple(sorted(s)) for s in zip(pts, pts[1:])}


def classify_walls(guess: dict, found, truth) -> list[tuple[str, bool, bool, bool]]:
    """Each wall of a refused guess (its castellan/1 JSON with the reader's marks, and as a Castle) against
    the true Castle: (right | extra | missing, misidentified: it shares a step with a wall of the other side,
    marked itself: an extra wall marked `check` or a missing one with a step among the guess's
    `unsure_absent_walls`, a doubted tower on it: one of its points among `towers_to_check` or
    `unsure_absent_towers`)."""
    al = best_alignment(found, truth)

    def wall_key(w: dict) -> tuple:
        return tuple(sorted((tuple(al.map(tuple(w["from"]))), tuple(al.map(tuple(w["to"]))))))

    true_walls = {tuple(sorted((w.a, w.b))) for w in truth.walls}
    guessed = {wall_key(w): w for w in guess.get("walls", [])}
    true_steps = set().union(*(wall_steps(*k) for k in true_walls))
    guess_steps = set().union(*(wall_steps(*k) for k in guessed))
    maybe_absent = {wall_key(w) for w in guess.get("unsure_absent_walls", [])}
    doubted_towers = {tuple(al.map(tuple(t))) for t in guess.get("towers_to_check", []) + guess.get("unsure_absent_towers", [])}

    def at_doubted_tower(k: tuple) -> bool:
        return any(pt in doubted_towers for step in wall_steps(*k) for pt in step)

    walls = []
    for k, w in guessed.items():
        kind = "right" if k in true_walls else "extra"
        walls.append((kind, kind == "extra" and bool(wall_steps(*k) & true_steps), bool(w.get("check")), at_doubted_tower(k)))
    for k in true_walls - set(guessed):
        walls.append(("missing", bool(wall_steps(*k) & guess_steps), bool(wall_steps(*k) & maybe_absent), at_doubted_tower(k)))
    return walls


def wrong_walls_marked(guess: dict, found, truth) -> list[int]:
    """[marked, wrong]: the walls a player must fix on a refused guess (extra ones, missing ones), and how
    many of them the result page marks themselves (classify_walls)."""
    wrong = [marked for kind, _, marked, _ in classify_walls(guess, found, truth) if kind != "right"]
    return [sum(wrong), len(wrong)]


def wrong_towers_marked(guess: dict, found, truth) -> list[int]:
    """[marked, wrong]: the towers a player must fix on a refused guess (extra ones, missing ones), and how
    many of them the result page marks (an extra tower among the guess's `towers_to_check`, a missing one
    among its `unsure_absent_towers`)."""
    al = best_alignment(found, truth)
    true_towers = {tuple(t) for t in truth.towers}
    checked = {tuple(al.map(tuple(t))) for t in guess.get("towers_to_check", [])}
    maybe = {tuple(al.map(tuple(t))) for t in guess.get("unsure_absent_towers", [])}
    guessed = {tuple(al.map(tuple(t))) for t in guess.get("towers", [])}
    extra, missing = guessed - true_towers, true_towers - guessed
    return [len(extra & checked) + len(missing & maybe), len(extra) + len(missing)]


def compare(found, truth) -> dict[str, Any]:
    """Per-kind true/false positives and negatives, keep colour and Double Keep agreement."""
    fa = align(found, truth)
    pf, pt = piece_sets(fa), piece_sets(truth)
    out: dict[str, Any] = {}
    for kind in ("tower", "short", "long"):
        out[kind] = {"tp": len(pf[kind] & pt[kind]), "fp": len(pf[kind] - pt[kind]), "fn": len(pt[kind] - pf[kind])}
    pairs = match_keeps(fa, truth)
    col_ok = sum(fa.keeps[i].colour == truth.keeps[j].colour for i, j in pairs)
    dbl_ok = sum(fa.keeps[i].double == truth.keeps[j].double for i, j in pairs)
    out["keep"] = {"tp": len(pairs), "fp": len(fa.keeps) - len(pairs), "fn": len(truth.keeps) - len(pairs),
                   "colour_ok": col_ok, "double_ok": dbl_ok}
    return out


def grey_errors(found, truth) -> dict[str, dict[str, list]]:
    """The grey pieces a reading has that the truth lacks ("extra") and lacks that the truth has ("missing"),
    per kind, in the truth's lattice frame: what kinds of misreads a set's readings make can then be
    counted from its JSON without reading the photos again."""
    pf, pt = piece_sets(align(found, truth)), piece_sets(truth)
    return {kind: {"extra": sorted(pf[kind] - pt[kind]), "missing": sorted(pt[kind] - pf[kind])}
            for kind in ("tower", "short", "long") if pf[kind] != pt[kind]}


def wrong_keeps(found, truth) -> list[int]:
    """Indices of the found keeps that are wrong: none stands there, or its colour or height is wrong."""
    fa = align(found, truth)
    right = {i for i, j in match_keeps(fa, truth)
             if fa.keeps[i].colour == truth.keeps[j].colour and fa.keeps[i].double == truth.keeps[j].double}
    return [i for i in range(len(fa.keeps)) if i not in right]


def match_keeps(aligned, truth) -> list[tuple[int, int]]:
    """(found index, true index) pairs: each true keep in turn takes the nearest unmatched found keep
    within half a step or so (`aligned` already moved onto the truth's frame by `align`)."""
    used, pairs = set(), []
    for j, k in enumerate(truth.keeps):
        best = None
        for i, f in enumerate(aligned.keeps):
            if i in used:
                continue
            dist = abs(f.at[0] - k.at[0]) + abs(f.at[1] - k.at[1])
            if dist < 0.6 and (best is None or dist < best[0]):
                best = (dist, i)
        if best is not None:
            used.add(best[1])
            pairs.append((best[1], j))
    return pairs


def band(conditions: dict[str, Any]) -> dict[str, str]:
    e = float(conditions.get("elevation_deg", 90))
    elev = "25-35" if e < 35 else ("35-50" if e < 50 else ("50-70" if e < 70 else "70-90"))
    temps = conditions.get("light_temps_k") or []
    if temps and max(temps) - min(temps) > 1500:
        light = "mixed"
    elif temps and max(temps) < 4000:
        light = "warm"
    else:
        light = "cold/daylight"
    return {"elevation": elev, "light": light, "table": str(conditions.get("table_kind", "?")),
            "mat": "mat" if conditions.get("mat_present") else "no mat"}


def use_truth_masks(p: Path, truth_json: dict) -> None:
    """Make the pixel model answer with the render's per-pixel truth of photo `p` (one-hot)."""
    import cv2
    import numpy as np

    import vision.masks
    import vision.pipeline
    from vision.train_pixels import item_classes, item_mask_path

    item_labels = cv2.imread(str(item_mask_path(p)), cv2.IMREAD_UNCHANGED)
    if item_labels is None:
        raise SystemExit(f"{p}: --truth-masks needs the render's {item_mask_path(p).name} beside it")
    classes = item_classes(truth_json, item_labels)

    def truth_probabilities(layers, pixels=None) -> np.ndarray:
        h, w = layers.lab.shape[:2]
        at_size = cv2.resize(classes, (w, h), interpolation=cv2.INTER_NEAREST)
        return np.eye(3, dtype=np.float32)[at_size]

    vision.masks.learned_probabilities = truth_probabilities
    vision.pipeline.PIXEL_READINGS = vision.pipeline.PIXEL_READINGS[:1]  # every reading would read the same truth


def with_truth_masks(photos: list[Path], log=print, needed_by: str = "--truth-masks") -> list[Path]:
    """The photos that have the render's per-pixel truth beside them; says which are left out (and what
    needs the truth: `needed_by`)."""
    from vision.train_pixels import item_mask_path

    without = [p for p in photos if not item_mask_path(p).exists()]
    if without:
        log(f"{needed_by}: {len(without)} photos have no per-pixel truth beside them and are left out "
            f"({', '.join(p.name for p in without[:5])}{', ...' if len(without) > 5 else ''})")
    return [p for p in photos if p not in without]


def photos_with_truth(folder: Path) -> list[Path]:
    """The photos of `folder` that have their truth JSON beside them, in name order."""
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTS and p.with_suffix(".json").exists())


def true_castle(truth_json: dict):
    """The truth's castle with the keeps beside it (supply) that the photo shows, as a reading should find them.

    A spare keep the renderer put wholly outside the frame (no pixel of it visible) is left out: no reader can
    find it and no player would add it on the result page. Until session 72 such keeps (63 of unseen57-60's
    400 photos had one) counted as missed keeps. Keeps in the castle count however hidden: they score."""
    from scoring import parse_castle

    castle = truth_json.get("castle_with_supply") or truth_json["castle"]
    out_of_view = {tuple(q["at"]) for q in truth_json.get("clutter", [])
                   if q.get("kind") == "keep" and q.get("visible_px", 1) == 0}
    if out_of_view:
        castle = dict(castle, keeps=[k for k in castle["keeps"] if tuple(k["at"]) not in out_of_view])
    return parse_castle(castle)


def true_scores(truth_json: dict) -> dict[str, int]:
    """Each player's score in the truth's castle (its supply keeps left out: they claim nothing)."""
    from scoring import parse_castle, score_castle

    return {c: v["score"] for c, v in score_castle(parse_castle(truth_json["castle"])).to_json()["players"].items()}


def scores_exactly(castle, true_score: dict[str, int]) -> bool:
    """Every player scores as in the truth, and a colour the truth does not have scores nothing."""
    from scoring import score_castle

    found = {c: v["score"] for c, v in score_castle(castle).to_json()["players"].items()}
    return all(found.get(c, 0) == s for c, s in true_score.items()) and all(c in true_score or s == 0 for c, s in found.items())


def read_one(p: Path, truth_masks: bool = False) -> dict[str, Any]:
    """Read one photo and compare it with its truth: one row of the benchmark."""
    import cv2

    from vision import PhotoError, read_photo
    from vision.pipeline import pieces_to_check

    cv2.setNumThreads(1)  # the target is seconds per photo on one core
    truth_json = json.loads(p.with_suffix(".json").read_text())
    if truth_masks:
        use_truth_masks(p, truth_json)
    truth = true_castle(truth_json)
    true_score = true_scores(truth_json)
    data = p.read_bytes()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        reading = read_photo(data)
        err = None
    except PhotoError as exc:
        reading, err = None, str(exc)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    row: dict[str, Any] = {"photo": p.name, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
                           "bands": band(truth_json.get("conditions", {}))}
    if reading is None:
        row.update({"refused": True, "refusal": err, "confidence": 0.0})
    else:
        row.update({"refused": reading.refusal is not None, "refusal": reading.refusal,
                    "confidence": round(reading.confidence, 3), "timings": reading.timings,
                    "factors": reading.rectification.get("factors", {}),
                    "pixels_read_by": reading.rectification.get("pixels_read_by"),
                    "notices": sum(1 for f in reading.findings if f.get("severity") == "notice")})
        castle = reading.castle or reading.tentative_castle
        if castle is not None:
            row["pieces"] = compare(castle, truth)
            row["corrections"] = corrections(row["pieces"])
            row["grey_errors"] = grey_errors(castle, truth)
            if reading.refusal is not None:  # what the result page marks on the unscored guess for the player to check
                guess = reading.to_json().get("tentative_castle") or {}
                row["marked"] = pieces_to_check(guess)
                wrong = wrong_keeps(castle, truth)  # the keeps a player must fix: which of them were marked
                row["wrong_keeps_marked"] = [sum(1 for i in wrong if guess["keeps"][i].get("check")), len(wrong)]
                row["wrong_walls_marked"] = wrong_walls_marked(guess, castle, truth)
                row["wrong_towers_marked"] = wrong_towers_marked(guess, castle, truth)
            row["score_exact"] = scores_exactly(castle, true_score)
        else:
            row["score_exact"] = False
    row["true_score"] = true_score
    row["true_pieces"] = len(truth.towers) + len(truth.walls) + len(truth.keeps)
    return row


def grey_pieces_right(pieces: dict[str, dict[str, int]]) -> tuple[int, int]:
    """(towers and walls read right, those plus the ones missing or extra) of a comparison: their ratio is the
    grey pieces' Jaccard index."""
    kinds = ("tower", "short", "long")
    right = sum(pieces[k]["tp"] for k in kinds)
    return right, right + sum(pieces[k]["fp"] + pieces[k]["fn"] for k in kinds)


def corrections(pieces: dict[str, dict[str, int]]) -> int:
    """Edits that turn a reading into the true castle on the result page's drawing: each piece missing or
    extra, each keep's wrong colour and wrong height."""
    edits = sum(c["fp"] + c["fn"] for c in pieces.values())
    keep = pieces.get("keep", {})
    return edits + 2 * keep.get("tp", 0) - keep.get("colour_ok", 0) - keep.get("double_ok", 0)


def _model_name() -> str:
    import hashlib

    from vision.pipeline import PIXEL_READINGS

    def named(paths) -> str:
        return " + ".join(f"{p} (sha256 {hashlib.sha256(p.read_bytes()).hexdigest()[:12]})" for p in paths)

    return "; then ".join(f"grey: {named(r.grey)}, keeps: {named(r.keep)}" for r in PIXEL_READINGS)


def run(folder: Path, limit: int | None = None, log=print, jobs: int = 1, truth_masks: bool = False) -> dict[str, Any]:
    """Read every photo of `folder` that has truth beside it; `jobs` photos at a time (one core each)."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    photos = photos_with_truth(folder)
    photos = [p for p in photos if not p.stem.endswith("_mask")]
    if truth_masks:
        photos = with_truth_masks(photos, log)
    if limit:
        photos = photos[:limit]
    rows = []
    pool = ProcessPoolExecutor(jobs) if jobs > 1 else None
    try:
        for row in (pool.map if pool else map)(partial(read_one, truth_masks=truth_masks), photos):
            rows.append(row)
            log(f"{row['photo']}: {'REFUSED ' + str(row['refusal']) if row['refused'] else 'scored'} "
                f"exact={row.get('score_exact')} conf={row['confidence']} {row['seconds']:.2f}s {row['bands']}")
    finally:
        if pool:
            pool.shutdown()
    result = summarise(rows)
    if truth_masks:
        result["pixel_model"] = "none: the renders' per-pixel truth (--truth-masks)"
    return result


def _summary(rows: list[dict]) -> dict[str, Any]:
    n = len(rows)
    answered = [r for r in rows if not r["refused"]]
    exact_answered = sum(1 for r in answered if r.get("score_exact"))
    wrong_high = sum(1 for r in answered if not r.get("score_exact") and r["confidence"] >= HIGH_CONFIDENCE)
    tot = defaultdict(lambda: defaultdict(int))
    for r in rows:  # piece accuracy of the reconstruction, also for refused photos that had one
        for kind, c in r.get("pieces", {}).items():
            for k, v in c.items():
                tot[kind][k] += v
    pieces = {}
    for kind, c in tot.items():
        prec = c["tp"] / max(1, c["tp"] + c["fp"])
        rec = c["tp"] / max(1, c["tp"] + c["fn"])
        pieces[kind] = {"precision": round(prec, 4), "recall": round(rec, 4),
                        "f1": round(2 * prec * rec / max(1e-9, prec + rec), 4)}
        if kind == "keep":
            pieces[kind]["colour_accuracy"] = round(c["colour_ok"] / max(1, c["tp"]), 4)
            pieces[kind]["double_accuracy"] = round(c["double_ok"] / max(1, c["tp"]), 4)
    secs = sorted(r["seconds"] for r in rows)
    cpus = sorted(r.get("cpu_seconds", r["seconds"]) for r in rows)
    # A refused photo's page starts from the reader's guess: how much of it the player must correct.
    guesses = [r for r in rows if r["refused"] and "corrections" in r]
    fixes = sorted(r["corrections"] for r in guesses)
    return {
        "photos": n,
        "exact_score_pct_of_all": round(100 * sum(1 for r in rows if r.get("score_exact") and not r["refused"]) / max(1, n), 2),
        "exact_score_pct_of_answered": round(100 * exact_answered / max(1, len(answered)), 2),
        "exact_reconstruction_pct_any_confidence": round(100 * sum(1 for r in rows if r.get("score_exact")) / max(1, n), 2),
        "refused_pct": round(100 * (n - len(answered)) / max(1, n), 2),
        "wrong_score_answered": len(answered) - exact_answered,
        "wrong_score_high_confidence": wrong_high,
        "pieces": pieces,
        "median_s": round(statistics.median(secs), 3) if secs else None,
        "p95_s": round(secs[min(len(secs) - 1, int(0.95 * len(secs)))], 3) if secs else None,
        # CPU time of the reading on one core: unlike wall time it does not grow when other jobs share it.
        "median_cpu_s": round(statistics.median(cpus), 3) if cpus else None,
        "p95_cpu_s": round(cpus[min(len(cpus) - 1, int(0.95 * len(cpus)))], 3) if cpus else None,
        "refused_with_guess": len(guesses),
        "guess_right_as_it_stands": sum(1 for r in guesses if r["corrections"] == 0),
        "guess_within_3_corrections": sum(1 for r in guesses if r["corrections"] <= 3),
        "guess_median_corrections": statistics.median(fixes) if fixes else None,
        "guess_median_true_pieces": statistics.median(r["true_pieces"] for r in guesses) if guesses else None,
        "guess_wrong_keeps_marked": [sum(r.get("wrong_keeps_marked", (0, 0))[i] for r in guesses) for i in (0, 1)],
        "guess_wrong_walls_marked": [sum(r.get("wrong_walls_marked", (0, 0))[i] for r in guesses) for i in (0, 1)],
        "guess_wrong_towers_marked": [sum(r.get("wrong_towers_marked", (0, 0))[i] for r in guesses) for i in (0, 1)],
    }


def summarise(rows: list[dict]) -> dict[str, Any]:
    import os
    import platform

    out = {"overall": _summary(rows), "bands": {}, "rows": rows,
           "pixel_model": _model_name(),
           "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg(), "python": platform.python_version()}}
    for key in ("elevation", "light", "table", "mat"):
        groups = defaultdict(list)
        for r in rows:
            groups[r["bands"][key]].append(r)
        out["bands"][key] = {g: _summary(rs) for g, rs in sorted(groups.items())}
    return out


def print_table(result: dict[str, Any], out=sys.stdout) -> None:
    def line(name: str, s: dict) -> str:
        p = s["pieces"]
        f1 = " ".join(f"{k}:{p[k]['precision']:.3f}/{p[k]['recall']:.3f}" for k in ("tower", "short", "long", "keep") if k in p)
        keep = p.get("keep", {})
        return (f"{name:<22} n={s['photos']:<4} exact={s['exact_score_pct_of_all']:6.2f}% "
                f"(answered {s['exact_score_pct_of_answered']:6.2f}%) refused={s['refused_pct']:6.2f}% "
                f"wrong-high-conf={s['wrong_score_high_confidence']} P/R {f1} "
                f"colour={keep.get('colour_accuracy', float('nan')):.3f} double={keep.get('double_accuracy', float('nan')):.3f} "
                f"wall median={s['median_s']}s p95={s['p95_s']}s cpu median={s['median_cpu_s']}s p95={s['p95_cpu_s']}s "
                f"refused guesses: {s['refused_with_guess']}, right {s['guess_right_as_it_stands']}, "
                f"<=3 edits {s['guess_within_3_corrections']}, median edits {s['guess_median_corrections']} "
                f"of {s['guess_median_true_pieces']} pieces, wrong keeps marked {s['guess_wrong_keeps_marked'][0]}/"
                f"{s['guess_wrong_keeps_marked'][1]}, walls {s['guess_wrong_walls_marked'][0]}/{s['guess_wrong_walls_marked'][1]}, "
                f"towers {s['guess_wrong_towers_marked'][0]}/{s['guess_wrong_towers_marked'][1]}")

    print(line("ALL", result["overall"]), file=out)
    for key, groups in result["bands"].items():
        for g, s in groups.items():
            print(line(f"{key}={g}", s), file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.vision_benchmark", description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--json", type=Path, help="write the full result (summary per band and every photo) here")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="photos read at once, one core each (default 1)")
    ap.add_argument("--truth-masks", action="store_true",
                    help="read with the renders' per-pixel truth instead of the pixel model (the later stages' ceiling)")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder}: not a folder", file=sys.stderr)
        return 2
    result = run(args.folder, args.limit, log=(lambda *a: None) if args.quiet else (lambda s: print(s, file=sys.stderr)),
                 jobs=max(1, args.jobs), truth_masks=args.truth_masks)
    print_table(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
