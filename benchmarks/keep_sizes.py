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
    from vision.keeps import KEEP_COLOURS, _silhouette
    from vision.masks import learned_probabilities
    from vision.pixels import SHIPPED_NET, PixelModels
    from vision.train_pixels import item_classes, item_mask_path

    cv2.setNumThreads(1)
    truth_json = json.loads(photo.with_suffix(".json").read_text())
    item_labels = cv2.imread(str(item_mask_path(photo)), cv2.IMREAD_UNCHANGED)
    # What the reading computed, recorded as it goes: its colour layers (whose cache keeps each pixel
    # model's probabilities), and each call of the keep stage with its camera and keep label image, so
    # every found keep is measured as the reading it came from saw it.
    calls: list[tuple[Any, Any, np.ndarray, list]] = []
    layers = []
    find_keeps, colour_layers = vision.pipeline.find_keeps, vision.pipeline.colour_layers

    def recording_keeps(cam, keep_label, dims, *args, **kwargs):
        found = find_keeps(cam, keep_label, dims, *args, **kwargs)
        calls.append((cam, dims, keep_label, found))
        return found

    def recording_layers(bgr):
        layers.append(colour_layers(bgr))
        return layers[-1]

    vision.pipeline.find_keeps, vision.pipeline.colour_layers = recording_keeps, recording_layers
    try:
        reading = vision.pipeline.read_photo(photo.read_bytes())
    finally:
        vision.pipeline.find_keeps, vision.pipeline.colour_layers = find_keeps, colour_layers
    castle = reading.castle or reading.tentative_castle
    if castle is None:
        return []
    truth = true_castle(truth_json)
    aligned = align(castle, truth)
    h, w = layers[0].lab.shape[:2]
    # (The network's probabilities come from the reading's cache: it reads every photo with them.)
    network = learned_probabilities(layers[0], PixelModels((SHIPPED_NET,), (SHIPPED_NET,)))[:, :, 2] > 0.5
    true_keeps = cv2.resize(item_classes(truth_json, item_labels), (w, h), interpolation=cv2.INTER_NEAREST) == 2
    blobs = {"truth": _Blobs(true_keeps), "network": _Blobs(network)}
    reader_blobs: dict[tuple[int, int], _Blobs] = {}  # per keep label image and colour
    rows = []
    for i, j in match_keeps(aligned, truth):
        keep = reading.keeps_found[i]
        call = next(c for c in calls if any(k is keep for k in c[3]))
        cam, dims, keep_label = call[0], call[1], call[2]
        single = float(cv2.contourArea(_silhouette(cam, np.array(keep.at), dims.keep_half, dims.keep_h).astype(np.float32)))
        colour = KEEP_COLOURS.index(keep.colour) + 1
        if (id(keep_label), colour) not in reader_blobs:
            reader_blobs[id(keep_label), colour] = _Blobs(keep_label == colour)
        by_mask = {"truth": blobs["truth"], "perceptron": reader_blobs[id(keep_label), colour], "network": blobs["network"]}
        rows.append({"photo": photo.name, "elevation": float(truth_json["camera"]["elevation_deg"]),
                     "colour": keep.colour, "lean": round(keep.lean, 2), "true_double": bool(truth.keeps[j].double),
                     "single_area": round(single, 1), **{f"area_{name}": b.area_at(keep.px) for name, b in by_mask.items()}})
    return rows


class _Blobs:
    """The blobs of a keep mask, cleaned as the keep stage cleans its colours and labelled once."""

    def __init__(self, mask: np.ndarray) -> None:
        import cv2

        from vision.keeps import clean_keep_pixels

        _, self.labels, self.stats, _ = cv2.connectedComponentsWithStats(clean_keep_pixels(mask))

    def area_at(self, at: tuple[float, float], reach: int = 3) -> int:
        """Pixels of the blob most of whose pixels within `reach` of `at` it holds; 0 when none is there."""
        import cv2

        x, y = int(round(at[0])), int(round(at[1]))
        near = self.labels[max(0, y - reach):y + reach + 1, max(0, x - reach):x + reach + 1]
        ids, counts = np.unique(near[near > 0], return_counts=True)
        return int(self.stats[ids[np.argmax(counts)], cv2.CC_STAT_AREA]) if len(ids) else 0


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
