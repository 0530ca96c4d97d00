"""How accurate calibration is, on synthetic photos with known answers (a benchmark, not a test).

    python -m calibration.benchmark intrinsics [--trials 10]      focal length error, random cameras
    python -m calibration.benchmark pieces [--trials 8]           piece size error, random sets and poses
    python -m calibration.benchmark vision DIR [--limit N]        vision accuracy without / with a camera profile

`intrinsics` and `pieces` draw exact pinhole views (calibration.synthetic) with random focal length,
principal point, lens distortion, camera elevation and azimuth, and piece sizes within +/-15 %.
`vision` reads a folder of renders (synth.batch output: X.jpg + X.json) twice with vision.read_photo,
without a profile and with the camera profile a perfect `castellan calibrate camera` would give (the
ground-truth K), and prints both accuracies side by side.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from calibration.camera import calibrate_camera
from calibration.pieces import PieceMeasureError, measure_pieces
from calibration.profiles import CameraProfile, Profile
from calibration.synthetic import box_corners, look_at, render_mat_view

SIZE = (960, 720)
GREY = (140, 140, 145)
KEEP_BGR = [(40, 40, 200), (200, 90, 30), (30, 200, 230), (60, 170, 50)]


def _stats(values: list[float]) -> str:
    a = np.abs(values)
    return f"mean |err| {a.mean():.3f}, median {np.median(a):.3f}, max {a.max():.3f}"


def bench_intrinsics(trials: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    w, h = SIZE
    errs, rms = [], []
    for trial in range(trials):
        f35 = rng.uniform(24, 52)
        f = f35 * math.hypot(w, h) / math.hypot(36, 24)
        K = np.array([[f, 0, w / 2 + rng.uniform(-0.02, 0.02) * w], [0, f, h / 2 + rng.uniform(-0.02, 0.02) * h], [0, 0, 1]])
        dist = np.array([rng.uniform(-0.15, 0.1), rng.uniform(-0.05, 0.05), 0, 0, 0])
        views = []
        for v in range(6):
            el, az = rng.uniform(38, 72), rng.uniform(0, 360)
            # Distance so that the A4 mat fills about 60 % of the frame's height.
            d = f * 297 / (0.6 * h) * rng.uniform(0.9, 1.15)
            R, t = look_at((105 + rng.uniform(-20, 20), 148 + rng.uniform(-30, 30)), el, az, d)
            views.append(render_mat_view(K, R, t, SIZE, dist=dist, seed=trial * 10 + v))
        try:
            cam = calibrate_camera(views).profile
        except ValueError as exc:
            print(f"trial {trial}: {exc}", file=sys.stderr)
            continue
        err = (cam.focal_px[0] / f - 1) * 100
        errs.append(err)
        rms.append(cam.reprojection_error_px)
        print(f"trial {trial}: f={f:.1f} (35 mm eq {f35:.0f}) -> {cam.focal_px[0]:.1f} ({err:+.2f} %), "
              f"k1 {dist[0]:+.3f} -> {cam.distortion[0]:+.3f}, rms {cam.reprojection_error_px:.3f} px", file=sys.stderr)
    return {"trials": trials, "solved": len(errs), "focal_error_pct": errs, "reprojection_px": rms,
            "summary": f"focal error % over {len(errs)}/{trials} cameras: {_stats(errs)}; "
                       f"reprojection rms median {statistics.median(rms):.3f} px"}


def _pieces_scene(rng: np.random.Generator):
    s = {k: rng.uniform(0.85, 1.15) for k in ("tower", "wall", "keep")}
    hs = rng.uniform(0.85, 1.15)
    spots = [(60, 60), (150, 70), (100, 140), (50, 222), (92, 232), (140, 215), (172, 160)]
    sizes = {"tower": (22 * s["tower"], 22 * s["tower"], 42 * hs), "short_wall": (32 * s["wall"], 9 * s["wall"], 30 * hs),
             "long_wall": (86 * s["wall"], 9 * s["wall"], 30 * hs), "keep": (16 * s["keep"], 16 * s["keep"], 22 * hs)}
    kinds = ["tower", "short_wall", "long_wall", "keep", "keep", "keep", "keep"]
    base_angle = [30, 120, 35, 20, 60, 110, 150]
    boxes = []
    for i, (kind, (x, y), a) in enumerate(zip(kinds, spots, base_angle)):
        ln, wd, ht = sizes[kind]
        colour = GREY if kind != "keep" else KEEP_BGR[i - 3]
        boxes.append((box_corners(x, y, ln, wd, a + rng.uniform(-15, 15)), ht, colour))
    return boxes, sizes


def bench_pieces(trials: int, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    w, h = 1280, 960
    f = 1000.0
    K = np.array([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1]])
    cam = CameraProfile((w, h), (f, f), (w / 2, h / 2))
    result = {"with_profile": [], "without_profile": [], "shadows_with_profile": [], "failures": []}
    for trial in range(trials):
        boxes, sizes = _pieces_scene(rng)
        el, az, d = rng.uniform(55, 85), rng.uniform(0, 360), rng.uniform(400, 480)
        R, t = look_at((105, 148), el, az, d)
        photo = render_mat_view(K, R, t, (w, h), boxes=boxes, seed=trial)
        # The same scene under a lamp that casts soft shadows.
        lamp = (rng.uniform(40, 70), rng.uniform(0, 360), rng.uniform(0.25, 0.5))
        shadowed = render_mat_view(K, R, t, (w, h), boxes=boxes, seed=trial, shadow=lamp)
        for key, camera, image in (("with_profile", cam, photo), ("without_profile", None, photo),
                                   ("shadows_with_profile", cam, shadowed)):
            try:
                m = measure_pieces(image, camera=camera)
            except PieceMeasureError as exc:
                result["failures"].append(f"trial {trial} {key}: {exc}")
                print(f"trial {trial} {key}: FAILED {exc}", file=sys.stderr)
                continue
            errs = {}
            for kind, (ln, wd, _) in sizes.items():
                got = getattr(m.pieces, kind).footprint_mm
                errs[kind] = (got[0] - ln, got[1] - wd)
            result[key].append(errs)
            print(f"trial {trial} el {el:.0f} az {az:.0f} {key}: " +
                  ", ".join(f"{k} {e[0]:+.2f}/{e[1]:+.2f}" for k, e in errs.items()), file=sys.stderr)
    lines = []
    for key in ("with_profile", "without_profile", "shadows_with_profile"):
        rows = result[key]
        if not rows:
            continue
        lengths = [e[k][0] for e in rows for k in e]
        widths = [e[k][1] for e in rows for k in e]
        within = sum(abs(v) <= 1.0 for v in lengths + widths) / len(lengths + widths) * 100
        lines.append(f"{key}: length error mm {_stats(lengths)}; width error mm {_stats(widths)}; "
                     f"{within:.0f} % of sizes within 1 mm ({len(rows)}/{trials} photos measured)")
    if result["failures"]:
        lines.append("not measured: " + "; ".join(result["failures"]))
    result["summary"] = "\n".join(lines)
    return result


def bench_vision(folder: Path, limit: int | None) -> dict:
    from benchmarks.vision_benchmark import compare
    from scoring import parse_castle, score_castle
    from vision import PhotoError, read_photo

    photos = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")
                    and p.with_suffix(".json").exists() and not p.stem.endswith("_mask"))[:limit]
    tallies = {"without": {"exact": 0, "refused": 0, "pieces_ok": 0, "pieces": 0},
               "with": {"exact": 0, "refused": 0, "pieces_ok": 0, "pieces": 0}}
    for p in photos:
        truth_json = json.loads(p.with_suffix(".json").read_text())
        truth = parse_castle(truth_json.get("castle_with_supply") or truth_json["castle"])
        true_score = {c: v["score"] for c, v in score_castle(parse_castle(truth_json["castle"])).to_json()["players"].items()}
        camj = truth_json["camera"]
        K = np.asarray(camj["K"], float)
        prof = Profile(camera=CameraProfile((int(camj["width"]), int(camj["height"])), (K[0, 0], K[1, 1]), (K[0, 2], K[1, 2])))
        data = p.read_bytes()
        line = [p.name]
        for key, profile in (("without", None), ("with", prof)):
            t = tallies[key]
            try:
                reading = read_photo(data, profile=profile)
            except PhotoError:
                t["refused"] += 1
                line.append(f"{key}: error")
                continue
            # A refused photo may still carry the pipeline's best guess; its pieces are compared
            # too (as the vision benchmark does), its score counts as not exact.
            castle = reading.castle or getattr(reading, "tentative_castle", None)
            refused = reading.refusal is not None or reading.castle is None
            t["refused"] += refused
            if castle is None:
                line.append(f"{key}: refused, no guess")
                continue
            cmp = compare(castle, truth)
            ok = sum(cmp[k]["tp"] for k in ("tower", "short", "long"))
            total = sum(cmp[k]["tp"] + cmp[k]["fp"] + cmp[k]["fn"] for k in ("tower", "short", "long"))
            t["pieces_ok"] += ok
            t["pieces"] += total
            pts = {c: v["score"] for c, v in score_castle(castle).to_json()["players"].items()}
            exact = not refused and all(pts.get(c, 0) == v for c, v in true_score.items()) and \
                all(c in true_score or v == 0 for c, v in pts.items())
            t["exact"] += exact
            line.append(f"{key}: {'refused' if refused else 'answered'} exact={exact} pieces {ok}/{total}")
        print("  ".join(line), file=sys.stderr)
    n = len(photos)
    summary = [f"{n} photos from {folder}"]
    for key in ("without", "with"):
        t = tallies[key]
        summary.append(f"{key:>7} camera profile: exact score {t['exact']}/{n} ({100 * t['exact'] / max(n, 1):.0f} %), "
                       f"refused {t['refused']}, pieces right {t['pieces_ok']}/{t['pieces']} "
                       f"({100 * t['pieces_ok'] / max(t['pieces'], 1):.1f} % Jaccard)")
    return {"photos": n, "tallies": tallies, "summary": "\n".join(summary)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.benchmark", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("intrinsics")
    a.add_argument("--trials", type=int, default=10)
    b = sub.add_parser("pieces")
    b.add_argument("--trials", type=int, default=8)
    c = sub.add_parser("vision")
    c.add_argument("folder", type=Path)
    c.add_argument("--limit", type=int)
    for p in (a, b, c):
        p.add_argument("--json", type=Path, help="write the full result here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.what == "intrinsics":
        result = bench_intrinsics(args.trials)
    elif args.what == "pieces":
        result = bench_pieces(args.trials)
    else:
        if not args.folder.is_dir():
            print(f"{args.folder}: not a folder", file=sys.stderr)
            return 2
        result = bench_vision(args.folder, args.limit)
    print(result["summary"])
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
