"""Measure the pixel model (vision/pixels.py) against the renders' per-pixel truth.

    python -m benchmarks.pixel_masks DIR[:FIRST:COUNT] ... [--model FILE ...] [--json out.json]

Per photo, the grey and keep masks (probability above 0.5, at the models' 640 px; by default as the
reader makes them, with --model from the mean of the files named) are compared with the renderer's
item masks (the same labels vision.train_pixels learns from; pixels on a border
between classes and the calibration mat's paper are left out). Prints grey and keep precision/recall
per table and overall, pooled over pixels. This is the stage measure for choosing a model; the
end-to-end benchmark (benchmarks.vision_benchmark) says what a model does to the scores.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from vision.masks import colour_layers, learned_features
from vision.pixels import class_probabilities, load_model
from vision.train_pixels import item_mask_path, read_training_photo, training_photos, truth_labels


def confusion(photo: Path, model_paths: tuple[Path, ...] | None) -> dict:
    """Pixel counts of true/predicted grey and keep on one photo (needs its PHOTO_mask.png)."""
    truth, decoded, item_labels = read_training_photo(photo)
    if item_labels is None:
        return {"photo": photo.name, "skipped": f"no {item_mask_path(photo).name} beside it (python -m synth.relabel makes it)"}
    feats, s = learned_features(colour_layers(decoded.bgr))
    probs = class_probabilities(feats, [load_model(p) for p in model_paths] if model_paths else None)
    labels = truth_labels(truth, feats.shape[:2], decoded.scale * s, item_labels)
    known = labels >= 0
    counts = {}
    for cls, name in ((1, "grey"), (2, "keep")):
        pred, true = (probs[:, :, cls] > 0.5) & known, labels == cls
        counts[name] = [int((pred & true).sum()), int(pred.sum()), int(true.sum())]
    return {"photo": photo.name, "table": truth.get("conditions", {}).get("table_kind", "?"), **counts}


def precision_recall(rows: list[dict], name: str) -> tuple[float, float]:
    hit, pred, true = (sum(r[name][i] for r in rows) for i in range(3))
    return hit / max(pred, 1), hit / max(true, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", metavar="DIR[:FIRST:COUNT]")
    ap.add_argument("--model", type=Path, nargs="+", help="model files to average (default: as the reader does)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    photos = [p for spec in args.folders for p in training_photos(spec)]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(confusion, photos, [tuple(args.model) if args.model else None] * len(photos)))
    for r in rows:
        if "skipped" in r:
            print(f"skipped {r['photo']}: {r['skipped']}")
    rows = [r for r in rows if "skipped" not in r]
    by_table = defaultdict(list)
    for r in rows:
        by_table[r["table"]].append(r)
    print(f"{'table':<12}{'photos':>7}{'grey P':>8}{'grey R':>8}{'keep P':>8}{'keep R':>8}")
    summary = {}
    for table, group in sorted(by_table.items()) + [("all", rows)]:
        (gp, gr), (kp, kr) = precision_recall(group, "grey"), precision_recall(group, "keep")
        summary[table] = {"photos": len(group), "grey_precision": gp, "grey_recall": gr, "keep_precision": kp, "keep_recall": kr}
        print(f"{table:<12}{len(group):>7}{gp:>8.3f}{gr:>8.3f}{kp:>8.3f}{kr:>8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"model": [str(m) for m in args.model] if args.model else "as the reader uses them", "photos": args.folders, "summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
