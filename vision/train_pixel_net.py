"""Train a convolutional pixel model (an ONNX file vision.pixels reads) on rendered photos with ground truth.

    python -m vision.train_pixel_net crops out/holdout out/unseen3 ... --cache /tmp/crops.npz
    python -m vision.train_pixel_net train /tmp/crops.npz [...] --out NET.onnx [--epochs 6] [--init NET.pt]

The per-pixel perceptron (vision.train_pixels) sees a pixel and a few blurred neighbours; whether a
grey pixel is a piece or a shadow, a table square or a courtyard between walls depends on what lies a
piece's width around it. This model reads the same 22 features (vision.pixels.pixel_features) through
a few convolutions that see about 40 pixels of the 640-pixel photo around each pixel, and writes the same
three probabilities (other / grey / keep).

`crops` cuts labelled windows from the renders (most around the castle, where the hard pixels are; half
the photos with the sensor noise and exposure change of vision.train_pixels.augmented) into one cache;
`train` fits the network with PyTorch and exports it to ONNX, which the reader runs with OpenCV's dnn
module. PyTorch (CPU) is needed only here: `pip install -e ".[train]"`.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from vision.masks import colour_layers, learned_features
from vision.train_pixels import augmented, read_training_photo, training_photos, truth_labels


# The flat scenes' labels are already classes; as "items" 1 and 2 they pass through truth_labels, which
# leaves the borders between classes out as it does for the renders.
FLAT_TRUTH = {"pieces": [{"kind": "tower", "mask_id": 1}, {"kind": "keep", "mask_id": 2}]}


def photo_crops(photo: Path, rng: np.random.Generator, size: int, near: int, anywhere: int,
                augment: bool, exposure: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(n, F, size, size) float16 features and (n, size, size) int8 labels (-1 unknown) of one photo;
    `exposure` (low, high) scales its light by a factor drawn between them (a dim room) before noise."""
    truth, decoded, item_labels = read_training_photo(photo)
    bgr = decoded.bgr
    if exposure:
        bgr = np.clip(bgr.astype(np.float32) * rng.uniform(*exposure), 0, 255).astype(np.uint8)
    bgr = augmented(bgr, rng) if augment or exposure else bgr
    feats, s = learned_features(colour_layers(bgr))
    labels = truth_labels(truth, feats.shape[:2], decoded.scale * s, item_labels)
    return crops_around_pieces(feats, labels, rng, size, near, anywhere)


def flat_scene_crops(rng: np.random.Generator, size: int, near: int, anywhere: int) -> tuple[np.ndarray, np.ndarray]:
    """Crops of one synth.flat scene: plastic with no texture, as the Mitsuba renders never show it."""
    from synth.flat import random_scene

    bgr, classes = random_scene(rng)
    feats, s = learned_features(colour_layers(bgr))
    labels = truth_labels(FLAT_TRUTH, feats.shape[:2], s, classes)
    return crops_around_pieces(feats, labels, rng, size, near, anywhere)


def crops_around_pieces(feats: np.ndarray, labels: np.ndarray, rng: np.random.Generator, size: int, near: int,
                        anywhere: int) -> tuple[np.ndarray, np.ndarray]:
    """`near` windows centred near piece pixels and `anywhere` windows anywhere (the photo reflected
    beyond its edges, labels unknown there)."""
    h, w = labels.shape
    pad = size // 2
    feats = np.pad(feats, ((pad, pad), (pad, pad), (0, 0)), mode="reflect")
    labels = np.pad(labels, ((pad, pad), (pad, pad)), constant_values=-1)
    pieces = np.flatnonzero(labels[pad:pad + h, pad:pad + w] > 0)
    centres = []
    for _ in range(near if len(pieces) else 0):
        y, x = divmod(int(rng.choice(pieces)), w)
        centres.append((y + int(rng.integers(-pad // 2, pad // 2 + 1)), x + int(rng.integers(-pad // 2, pad // 2 + 1))))
    for _ in range(anywhere):
        centres.append((int(rng.integers(0, h)), int(rng.integers(0, w))))
    xs, ys = [], []
    for cy, cx in centres:
        cy, cx = int(np.clip(cy, 0, h - 1)), int(np.clip(cx, 0, w - 1))
        xs.append(feats[cy:cy + size, cx:cx + size].transpose(2, 0, 1).astype(np.float16))
        ys.append(labels[cy:cy + size, cx:cx + size])
    return np.stack(xs), np.stack(ys)


def make_crops(args: argparse.Namespace) -> int:
    photos = [p for spec in args.folders for p in training_photos(spec)]
    rng = np.random.default_rng(args.seed)
    X, Y = [], []
    t0 = time.time()
    for i, p in enumerate(photos):
        try:
            x, y = photo_crops(p, rng, args.size, args.near, args.anywhere, augment=bool(i % 2), exposure=args.exposure)
        except Exception as exc:  # a broken render must not cost the whole cache
            print(f"skipped {p}: {exc}", file=sys.stderr)
            continue
        X.append(x)
        Y.append(y)
        if (i + 1) % 50 == 0:
            print(f"{i + 1}/{len(photos)} photos, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    for i in range(args.flat):
        x, y = flat_scene_crops(rng, args.size, args.near, args.anywhere)
        X.append(x)
        Y.append(y)
    np.savez(args.cache, x=np.concatenate(X), y=np.concatenate(Y))
    print(f"wrote {sum(len(x) for x in X)} crops of {len(X)} photos ({args.flat} flat scenes) to {args.cache}",
          file=sys.stderr)
    return 0


def build_net(n_features: int, width: int = 24):
    """Full resolution for the outline, a half-resolution branch with dilated convolutions for context;
    `n_features` input channels (vision.pixels.pixel_features')."""
    import torch
    from torch import nn

    class PixelNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mean = nn.Parameter(torch.zeros(1, n_features, 1, 1), requires_grad=False)
            self.scale = nn.Parameter(torch.ones(1, n_features, 1, 1), requires_grad=False)
            self.full = nn.Sequential(nn.Conv2d(n_features, width, 3, padding=1), nn.ReLU())
            self.context = nn.Sequential(
                nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
                nn.Conv2d(width, width, 3, padding=2, dilation=2), nn.ReLU(),
                nn.Conv2d(width, width, 3, padding=4, dilation=4), nn.ReLU(),
                nn.Conv2d(width, width, 3, padding=8, dilation=8), nn.ReLU())
            self.head = nn.Sequential(nn.Conv2d(2 * width, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, 3, 1))

        def forward(self, x):
            f = self.full((x - self.mean) / self.scale)
            c = nn.functional.interpolate(self.context(f), size=f.shape[2:], mode="bilinear", align_corners=False)
            return torch.softmax(self.head(torch.cat([f, c], dim=1)), dim=1)

    return PixelNet()


def train(args: argparse.Namespace) -> int:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    parts = [np.load(c) for c in args.cache]
    X, Y = np.concatenate([d["x"] for d in parts]), np.concatenate([d["y"] for d in parts])
    n = len(X)
    order = np.random.default_rng(args.seed).permutation(n)
    val, tr = order[: n // 20], order[n // 20:]
    net = build_net(X.shape[1], args.width)
    sample = X[tr[:2000]].astype(np.float32)
    net.mean.data = torch.from_numpy(sample.mean(axis=(0, 2, 3))[None, :, None, None])
    net.scale.data = torch.from_numpy(sample.std(axis=(0, 2, 3))[None, :, None, None] + 1e-3)
    # Pieces are a small part of a photo: weigh the classes towards even.
    counts = np.bincount(Y[tr[:2000]][Y[tr[:2000]] >= 0].ravel(), minlength=3).astype(np.float64)
    weight = torch.tensor((counts.sum() / (3 * counts)) ** 0.5, dtype=torch.float32)
    if args.init:  # go on from a trained network (its own standardisation included)
        net.load_state_dict(load_weights(args.init, weight))
        print(f"before training: validation {validate(net, X[val], Y[val])}", file=sys.stderr, flush=True)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    steps = args.epochs * (len(tr) // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    loss_fn = torch.nn.NLLLoss(weight=weight, ignore_index=-1)
    t0, step = time.time(), 0
    for epoch in range(args.epochs):
        net.train()
        perm = np.random.default_rng(args.seed + epoch).permutation(tr)
        for b in range(len(tr) // args.batch):
            idx = np.sort(perm[b * args.batch:(b + 1) * args.batch])
            # A random window of each batch's crops (a cheaper step, and the castle at another offset).
            rng = np.random.default_rng(step)
            oy, ox = rng.integers(0, X.shape[2] - args.window + 1, 2)
            x = torch.from_numpy(X[idx, :, oy:oy + args.window, ox:ox + args.window].astype(np.float32))
            y = torch.from_numpy(Y[idx, oy:oy + args.window, ox:ox + args.window].astype(np.int64))
            if rng.random() < 0.5:  # the world has no preferred side
                x, y = torch.flip(x, dims=[3]), torch.flip(y, dims=[2])
            loss = loss_fn(torch.log(net(x) + 1e-6), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 100 == 0:
                print(f"epoch {epoch} step {step}/{steps} loss {loss.item():.4f} {time.time() - t0:.0f} s",
                      file=sys.stderr, flush=True)
        print(f"epoch {epoch}: validation {validate(net, X[val], Y[val])}", file=sys.stderr, flush=True)
    net.eval()
    torch.save(net.state_dict(), args.out.with_suffix(".pt"))
    # The class weights made training see pieces as more common than they are; taking their logarithm
    # off the last layer's bias gives back probabilities for photos as they come (the reader uses them
    # as evidence, not only their argmax).
    with torch.no_grad():
        net.head[-1].bias -= torch.log(weight)
    dummy = torch.zeros(1, X.shape[1], 96, 128)
    torch.onnx.export(net, dummy, str(args.out), input_names=["features"], output_names=["probabilities"],
                      dynamic_axes={"features": {2: "h", 3: "w"}, "probabilities": {2: "h", 3: "w"}},
                      opset_version=13, dynamo=False)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def load_weights(path: Path, class_weight) -> dict:
    """A trained network's weights to go on from: a .pt written by `train`, or a shipped .onnx. The
    .onnx's last bias had the class weights' logarithm taken off (see `train`); it is put back for
    this training's class weights, so the network starts where it left off."""
    import torch

    if path.suffix != ".onnx":
        return torch.load(path)
    import onnx
    from onnx import numpy_helper

    state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in onnx.load(str(path)).graph.initializer}
    state["head.2.bias"] = state["head.2.bias"] + torch.log(class_weight)
    return state


def validate(net, X: np.ndarray, Y: np.ndarray) -> str:
    """Grey and keep precision/recall over the validation crops' known pixels."""
    import torch

    net.eval()
    tp, fp, fn = np.zeros(3), np.zeros(3), np.zeros(3)
    with torch.no_grad():
        for s in range(0, len(X), 64):
            pred = net(torch.from_numpy(X[s:s + 64].astype(np.float32))).argmax(dim=1).numpy()
            y = Y[s:s + 64]
            known = y >= 0
            for c in (1, 2):
                tp[c] += np.sum((pred == c) & (y == c) & known)
                fp[c] += np.sum((pred == c) & (y != c) & known)
                fn[c] += np.sum((pred != c) & (y == c) & known)
    net.train()
    p, r = tp / np.maximum(tp + fp, 1), tp / np.maximum(tp + fn, 1)
    return f"grey P/R {p[1]:.3f}/{r[1]:.3f}, keep P/R {p[2]:.3f}/{r[2]:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("crops", help="cut labelled windows from rendered photos into a cache")
    c.add_argument("folders", nargs="*", metavar="DIR[:FIRST:COUNT]")
    c.add_argument("--flat", type=int, default=0, help="also this many synth.flat scenes (untextured plastic)")
    c.add_argument("--cache", type=Path, required=True)
    c.add_argument("--size", type=int, default=128)
    c.add_argument("--exposure", type=float, nargs=2, metavar=("LOW", "HIGH"),
                   help="darken (or brighten) every photo by a factor between these (dim rooms are rare in the renders)")
    c.add_argument("--near", type=int, default=3, help="windows per photo around the castle")
    c.add_argument("--anywhere", type=int, default=1, help="windows per photo anywhere")
    c.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("train", help="train on a cache and export ONNX")
    t.add_argument("cache", type=Path, nargs="+")
    t.add_argument("--out", type=Path, required=True, help="the .onnx to write (a .pt of the weights goes beside it)")
    t.add_argument("--epochs", type=int, default=6)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--window", type=int, default=96, help="training window cut from each crop (pixels)")
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--width", type=int, default=24)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--init", type=Path, help="start from this trained network (a .pt written beside each .onnx, or a shipped .onnx)")
    args = ap.parse_args(argv)
    return make_crops(args) if args.command == "crops" else train(args)


if __name__ == "__main__":
    raise SystemExit(main())
