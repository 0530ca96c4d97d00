"""Measure the photo reader stage by stage against rendered ground truth (pose, lattice, pieces).

    python -m benchmarks.vision_stages DIR [--limit N] [--jobs 2] [--json out.json] [--truth-masks]

The end-to-end benchmark (benchmarks.vision_benchmark) says how often a photo is read right; this one
says *which stage* went wrong, in the manner of chesscog's per-stage evaluation:

- pose: angle between the estimated and the true table normal, in degrees;
- lattice: the true lattice points mapped through the true lattice->image homography and back through
  the fitted one; an affine fit of the result gives the pitch ratio (1 = right, 0.5 = the fitted pitch is
  twice the true one), the angle error modulo 90 degrees and the phase error (median distance of the
  mapped points from whole lattice steps; 0.25 is chance);
- pieces: tower and wall recall/precision of the grey castle (keeps are not read here).

With `--truth-masks` the stages read the renders' per-pixel truth instead of the pixel model's masks,
which separates the geometry's own errors from those of the masks it is given.

Needs photos rendered by `castellan synth` (their JSON carries the camera and lattice_to_image).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.vision_benchmark import band, compare, use_truth_masks, with_truth_masks


def _lattice_errors(true_l2i: np.ndarray, est_l2i: np.ndarray, towers: np.ndarray) -> dict[str, float]:
    pts = np.c_[towers, np.ones(len(towers))]
    img = pts @ true_l2i.T
    img = img[:, :2] / img[:, 2:3]
    back = np.c_[img, np.ones(len(img))] @ np.linalg.inv(est_l2i).T
    ij = back[:, :2] / back[:, 2:3]
    A, *_ = np.linalg.lstsq(pts, ij, rcond=None)  # ij = towers @ A[:2] + A[2]
    M = A[:2].T
    if np.linalg.det(M) < 0:  # a mirrored frame is as good as any (castellan/1 leaves orientation free)
        M = M @ np.diag([1.0, -1.0])
    ratio = math.sqrt(abs(np.linalg.det(M)))
    angle = math.degrees(math.atan2(M[1, 0] - M[0, 1], M[0, 0] + M[1, 1])) % 90.0
    phase = float(np.median(np.abs(ij - np.round(ij)).max(axis=1)))
    return {"pitch_ratio": round(ratio, 3), "angle_err_deg": round(min(angle, 90 - angle), 2), "phase": round(phase, 3)}


def measure(photo: Path, truth_masks: bool = False) -> dict[str, Any]:
    import cv2

    from scoring import parse_castle
    from vision.decode import decode_photo
    from vision.masks import compute_masks
    from vision.pipeline import _mask_out_mat, fit_pieces, lattice_from_pose, table_pose
    from vision.region import castle_region
    from vision.repairs import build_castle

    cv2.setNumThreads(1)
    truth = json.loads(photo.with_suffix(".json").read_text())
    row: dict[str, Any] = {"photo": photo.name, "bands": band(truth.get("conditions", {}))}
    if truth_masks:
        use_truth_masks(photo, truth)
    ph = decode_photo(photo.read_bytes())
    S = np.diag([ph.scale, ph.scale, 1.0])
    masks = compute_masks(ph.bgr)
    region = castle_region(masks.grey)
    pose = table_pose(ph, masks.grey & region)
    if pose is None:
        row["stage"] = "pose"
        return row
    if pose.mat_to_image is not None:
        region = _mask_out_mat(masks, pose)
    n_true = np.array(truth["camera"]["R"])[:, 2]
    n_est = pose.camera.R[:, 2]
    row["source"] = pose.source
    row["normal_err_deg"] = round(math.degrees(math.acos(min(1.0, abs(float(n_true @ n_est))))), 2)
    row["focal_ratio"] = round(float(pose.camera.K[0, 0]) / (truth["camera"]["K"][0][0] * ph.scale), 3)
    lattice = lattice_from_pose(pose, masks.grey & region)
    if lattice is None:
        row["stage"] = "lattice"
        return row
    towers = np.array(truth["castle"]["towers"], float)
    true_l2i = S @ np.array(truth["lattice_to_image"])
    row["first_lattice"] = _lattice_errors(true_l2i, pose.camera.plane_homography(0.0) @ np.vstack([lattice.affine(), [0, 0, 1]]), towers)
    fit = fit_pieces(pose, lattice, masks, region)
    if fit is None:
        row["stage"] = "fit"
        return row
    row["lattice"] = _lattice_errors(true_l2i, fit.cam.plane_homography(0.0), towers)
    castle, _ = build_castle(fit, [])
    pieces = compare(castle, parse_castle(truth["castle"]))
    pieces.pop("keep", None)
    row["pieces"] = pieces
    row["grey_exact"] = all(c["fp"] == 0 and c["fn"] == 0 for c in pieces.values())
    return row


def _safe_measure(photo: Path, truth_masks: bool = False) -> dict[str, Any]:
    try:
        return measure(photo, truth_masks)
    except Exception as exc:  # a crash is a finding of this benchmark, not the end of it
        return {"photo": photo.name, "stage": "crash", "error": repr(exc)}


def summarise(rows: list[dict]) -> dict[str, Any]:
    posed = [r for r in rows if "normal_err_deg" in r]
    lat = [r for r in rows if "lattice" in r]
    out: dict[str, Any] = {"photos": len(rows)}
    out["pose_within_3deg"] = sum(r["normal_err_deg"] < 3 for r in posed)
    out["pose_over_30deg"] = sum(r["normal_err_deg"] > 30 for r in posed)
    out["no_pose"] = len(rows) - len(posed)
    for key in ("first_lattice", "lattice"):
        rs = [r[key] for r in rows if key in r]
        out[f"{key}_pitch_ok"] = sum(abs(x["pitch_ratio"] - 1) < 0.05 for x in rs)
        out[f"{key}_angle_ok"] = sum(x["angle_err_deg"] < 1.0 for x in rs)
        out[f"{key}_all_ok"] = sum(abs(x["pitch_ratio"] - 1) < 0.05 and x["angle_err_deg"] < 1.0 and x["phase"] < 0.15 for x in rs)
    tot: dict[str, dict[str, int]] = {}
    for r in lat:
        for kind, c in r["pieces"].items():
            t = tot.setdefault(kind, {"tp": 0, "fp": 0, "fn": 0})
            for k in t:
                t[k] += c[k]
    out["pieces"] = {k: {"recall": round(c["tp"] / max(1, c["tp"] + c["fn"]), 3),
                         "precision": round(c["tp"] / max(1, c["tp"] + c["fp"]), 3)} for k, c in tot.items()}
    out["grey_exact"] = sum(bool(r.get("grey_exact")) for r in rows)
    if posed:
        out["median_normal_err_deg"] = round(statistics.median(r["normal_err_deg"] for r in posed), 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--truth-masks", action="store_true", help="the renders' per-pixel truth instead of the pixel model's masks")
    args = ap.parse_args(argv)
    photos = sorted(p for p in args.folder.glob("*.jpg") if p.with_suffix(".json").exists())
    if args.truth_masks:
        photos = with_truth_masks(photos)
    photos = photos[: args.limit]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(partial(_safe_measure, truth_masks=args.truth_masks), photos))
    print(f"{'photo':<16}{'src':<7}{'normal°':>8}{'f ratio':>8}{'pitch0':>8}{'pitch':>7}{'angle°':>7}{'phase':>6}  towers r/p   elev  table")
    for r in rows:
        la, fl = r.get("lattice", {}), r.get("first_lattice", {})
        tw = r.get("pieces", {}).get("tower")
        trp = f"{tw['tp'] / max(1, tw['tp'] + tw['fn']):.2f}/{tw['tp'] / max(1, tw['tp'] + tw['fp']):.2f}" if tw else r.get("stage", "")
        print(f"{r['photo']:<16}{r.get('source', '-'):<7}{r.get('normal_err_deg', float('nan')):>8.1f}{r.get('focal_ratio', float('nan')):>8.2f}"
              f"{fl.get('pitch_ratio', float('nan')):>8.2f}{la.get('pitch_ratio', float('nan')):>7.2f}{la.get('angle_err_deg', float('nan')):>7.1f}"
              f"{la.get('phase', float('nan')):>6.2f}  {trp:<11} {r.get('bands', {}).get('elevation', ''):>6} {r.get('bands', {}).get('table', '')}")
    summary = summarise(rows)
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
