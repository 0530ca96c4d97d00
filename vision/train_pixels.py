"""Train the pixel model (vision/pixels.py) on rendered photos with ground truth.

    python -m vision.train_pixels out/fresh:0:150 out/holdout [--out vision/pixel_model.npz]

Each folder may carry a slice, DIR:FIRST:COUNT (photos in name order), to keep photos that measure the
model out of its training.

Labels come from the renders' truth: the per-pixel item labels that `castellan synth` writes beside
each photo (PHOTO_mask.png), or without them every piece's outline. Pixels on the border between two
classes, and where a keep and a grey piece overlap, are left out (either class could be right there);
so is the calibration mat's paper. Needs scikit-learn (`pip install -e ".[train]"`), which
the reader itself does not.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

from vision.decode import DecodedPhoto, decode_photo
from vision.masks import colour_layers, learned_features
from vision.pixels import CLASSES, SHIPPED_MODEL, PixelModel

GREY_KINDS = ("tower", "short_wall", "long_wall")


def item_mask_path(photo: Path) -> Path:
    """Where `castellan synth` (and synth.relabel) put a photo's per-pixel item labels."""
    return photo.with_name(photo.stem + "_mask.png")


def item_classes(truth: dict, item_labels: np.ndarray) -> np.ndarray:
    """uint8 per pixel of the renderer's item labels: 0 other, 1 grey plastic, 2 keep."""
    kind_of = np.zeros(int(item_labels.max()) + 1, np.uint8)
    for item in list(truth["pieces"]) + list(truth.get("clutter") or []):
        if item.get("mask_id") is not None and item["mask_id"] < len(kind_of):
            kind_of[item["mask_id"]] = 1 if item["kind"] in GREY_KINDS else (2 if item["kind"] == "keep" else 0)
    return kind_of[item_labels]


def truth_labels(truth: dict, shape: tuple[int, int], scale: float, item_labels: np.ndarray | None = None) -> np.ndarray:
    """int8 per pixel: 0 other, 1 grey, 2 keep, -1 left out.

    From the renderer's per-pixel item labels (PHOTO_mask.png: which piece is seen where) when there
    are some, else from every piece's outline (the convex hull of its projected box, which also takes
    in the gaps between merlons and so teaches a slightly fat mask)."""
    items = list(truth["pieces"]) + list(truth.get("clutter") or [])
    if item_labels is not None:
        labels = cv2.resize(item_classes(truth, item_labels), shape[::-1], interpolation=cv2.INTER_NEAREST)
    else:
        grey, keep = np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)
        for item in items:
            pts = np.round(np.asarray(item["outline_px"], np.float64) * scale).astype(np.int32)
            if item["kind"] in GREY_KINDS:
                cv2.fillPoly(grey, [pts], 1)
            elif item["kind"] == "keep":
                cv2.fillPoly(keep, [pts], 1)
        labels = grey + 2 * keep  # 3 where a keep and a grey piece overlap
    k = np.ones((3, 3), np.uint8)
    boundary = cv2.dilate(labels, k) != cv2.erode(labels, k)
    # The calibration mat is cut out of the masks before they are used (vision.pipeline), and its white
    # paper would teach the model that bright, even, neutral surfaces are not plastic.
    mat = np.zeros(shape, np.uint8)
    if truth.get("mat") and truth["mat"].get("corners_px"):
        cv2.fillPoly(mat, [np.round(np.asarray(truth["mat"]["corners_px"]) * scale).astype(np.int32)], 1)
        mat = cv2.dilate(mat, np.ones((5, 5), np.uint8))
    labels = labels.astype(np.int8)
    labels[boundary | (labels == 3) | ((mat > 0) & (labels == 0))] = -1
    return labels


def augmented(bgr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The photo as a noisier or differently exposed phone might have taken it: sensor noise (worst on
    dark tables, where the renders are cleaner than phones) and an exposure change. (Blur and blown
    highlights as well made the model worse on the held-out renders.)"""
    img = bgr.astype(np.float32) * rng.uniform(0.75, 1.25)
    img += rng.normal(0.0, rng.uniform(1.0, 6.0), img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def read_training_photo(photo: Path) -> tuple[dict, DecodedPhoto, np.ndarray | None]:
    """A rendered photo's truth, the photo decoded at the reader's working size, and its per-pixel item
    labels (None when there is no PHOTO_mask.png beside it)."""
    truth = json.loads(photo.with_suffix(".json").read_text())
    decoded = decode_photo(photo.read_bytes(), max_side=1280)
    mask_path = item_mask_path(photo)
    item_labels = cv2.imread(str(mask_path), cv2.IMREAD_UNCHANGED) if mask_path.exists() else None
    return truth, decoded, item_labels


def samples(photo: Path, rng: np.random.Generator, per_class: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Labelled feature vectors of one photo and of an augmented copy of it (`per_class` each)."""
    truth, decoded, item_labels = read_training_photo(photo)
    labels = near = None
    xs, ys = [], []
    for augment in (False, True):
        bgr = augmented(decoded.bgr, rng) if augment else decoded.bgr
        feats, s = learned_features(colour_layers(bgr))
        if labels is None:  # the same for the copy: it is the same photo, size and all
            labels = truth_labels(truth, feats.shape[:2], decoded.scale * s, item_labels)
            # Half the "other" samples come from near the castle (shadows, courtyards): the hard ones.
            near = cv2.dilate((labels > 0).astype(np.uint8), np.ones((31, 31), np.uint8)) > 0
        for cls, n in enumerate(per_class):
            pools = [(labels == cls) & near, labels == cls] if cls == 0 else [labels == cls]
            for pool in pools:
                idx = np.flatnonzero(pool)
                if len(idx) == 0:
                    continue
                pick = rng.choice(idx, min(len(idx), n // len(pools)), replace=False)
                xs.append(feats.reshape(-1, feats.shape[2])[pick])
                ys.append(np.full(len(pick), cls, np.int8))
    return np.concatenate(xs), np.concatenate(ys)


def training_photos(spec: str) -> list[Path]:
    """The photos with ground truth that DIR[:FIRST:COUNT] names, in name order."""
    folder, _, part = spec.partition(":")
    photos = sorted(p for p in Path(folder).glob("*.jpg") if p.with_suffix(".json").exists())
    if not part:
        return photos
    try:
        first, count = (int(x) for x in part.split(":"))
    except ValueError:
        raise SystemExit(f"{spec}: expected DIR or DIR:FIRST:COUNT, e.g. out/fresh:0:150") from None
    return photos[first:first + count]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", metavar="DIR[:FIRST:COUNT]")
    ap.add_argument("--per-class", type=int, nargs=3, default=(1500, 1000, 400))
    ap.add_argument("--hidden", type=int, nargs="+", default=(32, 32))
    ap.add_argument("--out", type=Path, default=SHIPPED_MODEL)
    args = ap.parse_args(argv)
    from sklearn.neural_network import MLPClassifier

    photos = [p for spec in args.folders for p in training_photos(spec)]
    rng = np.random.default_rng(0)
    X, y = [], []
    for i, p in enumerate(photos):
        a, b = samples(p, rng, tuple(args.per_class))
        X.append(a)
        y.append(b)
        print(f"{i + 1}/{len(photos)} {p.name}: {np.bincount(b, minlength=3).tolist()}", file=sys.stderr, flush=True)
    X, y = np.concatenate(X), np.concatenate(y)
    mean, scale = X.mean(axis=0), X.std(axis=0) + 1e-6
    clf = MLPClassifier(hidden_layer_sizes=tuple(args.hidden), alpha=1e-4, batch_size=512, max_iter=25,
                        early_stopping=True, random_state=0)
    clf.fit((X - mean) / scale, y)
    print(f"trained on {len(y)} pixels of {len(photos)} photos ({np.bincount(y).tolist()} of {CLASSES}); "
          f"validation accuracy {clf.best_validation_score_:.4f}", file=sys.stderr)
    PixelModel(mean.astype(np.float32), scale.astype(np.float32), tuple(w.astype(np.float32) for w in clf.coefs_),
               tuple(b.astype(np.float32) for b in clf.intercepts_)).save(args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
