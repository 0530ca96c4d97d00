"""How surely a keep's size tells a Double Keep from a single one, by each keep mask, beside the truth.

    python -m benchmarks.keep_sizes DIR... [--json out.json] [--jobs 2]

Seen from nearly straight above, a keep's height shows only in its size (vision.keeps.heights_from_size:
a Double Keep's blob is some 10-30 % bigger than a single keep's there). For every keep a photo's reading
finds and matches to a true keep, this measures its blob in several keep masks: the render's own
(`truth`, from PHOTO_mask.png, which must lie beside the photo), the reader's (`perceptron`: the keep
pixels the shipped first reading reads keeps with), the pixel network's (`network`), and the mean of
the last two. Each blob's area is set against a single keep's silhouette where the keep stands, as a
log, less the median of the photo's keeps; the AUC per elevation band says how well that tells a
Double Keep from a single one (1.0: every Double Keep bigger than every single keep; 0.5: no better
than a coin). Keeps whose top leans under MIN_LEAN_PX are the ones read by their size.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core per photo, as the reader is timed
import argparse
import json
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.vision_benchmark import align, match_keeps, photos_with_truth, true_castle, with_truth_masks

MASKS = ("truth", "perceptron", "network")
BANDS = ((50, 70), (70, 91))


def keep_blob_areas(photo: Path) -> list[dict[str, Any]]:
    """One row per found keep matched to a true keep: its true height, its lean, a single keep's
    silhouette area there, and its blob's area in each of MASKS (0 where the mask has none there)."""
    import cv2

    import vision.pipeline
    from vision.decode import decode_photo
    from vision.keeps import KEEP_COLOURS, _silhouette
    from vision.masks import colour_layers
    from vision.pixels import SHIPPED_NET, _probabilities, load_model
    from vision.train_pixels import item_classes, item_mask_path

    cv2.setNumThreads(1)
    truth_json = json.loads(photo.with_suffix(".json").read_text())
    item_labels = cv2.imread(str(item_mask_path(photo)), cv2.IMREAD_UNCHANGED)
    # Each call of the keep stage with what it was given, so every found keep can be measured with the
    # camera and keep label image of the reading it came from.
    calls: list[tuple[Any, Any, np.ndarray, list]] = []
    find_keeps = vision.pipeline.find_keeps

    def recording(cam, keep_label, dims, *args, **kwargs):
        found = find_keeps(cam, keep_label, dims, *args, **kwargs)
        calls.append((cam, dims, keep_label, found))
        return found

    vision.pipeline.find_keeps = recording
    try:
        data = photo.read_bytes()
        reading = vision.pipeline.read_photo(data)
    finally:
        vision.pipeline.find_keeps = find_keeps
    castle = reading.castle or reading.tentative_castle
    if castle is None:
        return []
    truth = true_castle(truth_json)
    aligned = align(castle, truth)
    layers = colour_layers(decode_photo(data, max_side=vision.pipeline.WORKING_SIDE).bgr)
    h, w = layers.lab.shape[:2]
    network = cv2.resize(_probabilities(layers.features, load_model(SHIPPED_NET)), (w, h), interpolation=cv2.INTER_LINEAR)
    true_keeps = cv2.resize(item_classes(truth_json, item_labels), (w, h), interpolation=cv2.INTER_NEAREST) == 2
    rows = []
    for i, j in match_keeps(aligned, truth):
        keep = reading.keeps_found[i]
        cam, dims, keep_label = next((c[0], c[1], c[2]) for c in calls if any(k is keep for k in c[3]))
        single = float(cv2.contourArea(_silhouette(cam, np.array(keep.at), dims.keep_half, dims.keep_h).astype(np.float32)))
        reader_mask = keep_label == KEEP_COLOURS.index(keep.colour) + 1
        blobs = {"truth": true_keeps, "perceptron": reader_mask, "network": network[:, :, 2] > 0.5}
        rows.append({"photo": photo.name, "elevation": float(truth_json["camera"]["elevation_deg"]),
                     "colour": keep.colour, "lean": round(keep.lean, 2), "true_double": bool(truth.keeps[j].double),
                     "single_area": round(single, 1),
                     **{f"area_{name}": _blob_area(mask, keep.px) for name, mask in blobs.items()}})
    return rows


def _blob_area(mask: np.ndarray, at: tuple[float, float], reach: int = 3) -> int:
    """Pixels of the blob of `mask` (cleaned as the keep stage cleans its colours) most of whose pixels
    lie within `reach` of `at`; 0 when there is none."""
    import cv2

    m = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    _, labels, stats, _ = cv2.connectedComponentsWithStats(m)
    x, y = int(round(at[0])), int(round(at[1]))
    near = labels[max(0, y - reach):y + reach + 1, max(0, x - reach):x + reach + 1]
    ids, counts = np.unique(near[near > 0], return_counts=True)
    return int(stats[ids[np.argmax(counts)], cv2.CC_STAT_AREA]) if len(ids) else 0


def auc(positive: np.ndarray, negative: np.ndarray) -> float | None:
    """The chance that a positive scores above a negative (ties count half); None without both."""
    if not len(positive) or not len(negative):
        return None
    p, n = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def relative_sizes(rows: list[dict[str, Any]], mask: str) -> np.ndarray:
    """Per row, log(blob area / single keep's area) less its photo's median; "mean" is the mean of the
    perceptron's and the network's. Rows whose blob is missing in that mask must be left out first."""
    names = ("perceptron", "network") if mask == "mean" else (mask,)
    size = np.mean([[np.log(r[f"area_{n}"] / r["single_area"]) for r in rows] for n in names], axis=0)
    by_photo: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_photo[r["photo"]].append(i)
    out = np.array(size, float)
    for idx in by_photo.values():
        out[idx] = size[idx] - np.median(size[idx])
    return out


def summarise(rows: list[dict[str, Any]], lean_below: float | None) -> dict[str, Any]:
    """AUC of each mask's relative size per elevation band, on keeps every mask found (and, with
    `lean_below`, whose top leans less than that many pixels)."""
    out = {}
    for lo, hi in BANDS:
        band = [r for r in rows if lo <= r["elevation"] < hi and (lean_below is None or r["lean"] < lean_below)
                and r["single_area"] > 0 and all(r[f"area_{m}"] > 0 for m in MASKS)]
        double = np.array([r["true_double"] for r in band], bool)
        entry: dict[str, Any] = {"keeps": len(band), "double_keeps": int(double.sum())}
        for mask in (*MASKS, "mean"):
            rel = relative_sizes(band, mask) if band else np.zeros(0)
            entry[f"auc_{mask}"] = auc(rel[double], rel[~double])
        out[f"{lo}-{min(hi, 90)}"] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    from vision.keeps import MIN_LEAN_PX

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--json", help="write every keep's row and the summary here")
    ap.add_argument("--jobs", type=int, default=1, help="photos read at once, one core each")
    args = ap.parse_args(argv)
    photos: list[Path] = []
    for folder in map(Path, args.folders):
        if not folder.is_dir():
            print(f"{folder}: folder not found", file=sys.stderr)
            return 2
        photos += photos_with_truth(folder)
    photos = with_truth_masks(photos, log=lambda message: print(message, file=sys.stderr), needed_by="keep_sizes")
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        rows = [r for per_photo in pool.map(keep_blob_areas, photos) for r in per_photo]
    summary = {"all keeps": summarise(rows, None), f"keeps leaning under {MIN_LEAN_PX:g} px": summarise(rows, MIN_LEAN_PX)}
    print(f"{len(photos)} photos, {len(rows)} keeps matched to the truth; AUC of each mask's relative size, double against single")
    print(f"{'keeps':<26} {'band':<7} {'keeps':>6} {'double':>6} " + " ".join(f"{m:>10}" for m in (*MASKS, "mean")))
    for which, bands in summary.items():
        for band, e in bands.items():
            aucs = " ".join(f"{e[f'auc_{m}']:>10.3f}" if e[f"auc_{m}"] is not None else f"{'-':>10}" for m in (*MASKS, "mean"))
            print(f"{which:<26} {band:<7} {e['keeps']:>6} {e['double_keeps']:>6} {aucs}")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "keeps": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
