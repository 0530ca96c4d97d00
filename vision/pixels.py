"""Per-pixel classes (table or clutter / grey plastic / keep) by a small learned model.

Hand-set colour thresholds fail where the table itself is neutral or patterned (gingham, marble,
grey paint): there grey plastic, the table's white squares and the shadows all look alike pixel by
pixel. A small multilayer perceptron, trained on rendered photos whose truth says which pixel is a
piece (`python -m vision.train_pixels`), weighs the same cues the rules used (colour after white
balance, how table-like a pixel is in this photo, lightness against the table's) together with its
neighbourhood (blurred cues, edges), and learns where each cue can be trusted.

The perceptron is plain arrays (vision/pixel_model.npz: standardisation and layer weights), evaluated
here with numpy; scikit-learn is needed only to train it. A small convolutional network
(vision/pixel_net.onnx, trained by vision.train_pixel_net, run by OpenCV's dnn module) sees some 40 pixels
around each pixel; the reader averages the two for the grey plastic (READINGS below;
docs/vision-failure-analysis.md, sessions 9 and 10).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from threadpoolctl import threadpool_limits

SHIPPED_MODEL = Path(__file__).with_name("pixel_model.npz")  # the perceptron
SHIPPED_NET = Path(__file__).with_name("pixel_net.onnx")  # the convolutional network (vision.train_pixel_net)


@dataclass(frozen=True)
class PixelModels:
    """Which model files read a photo's pixels: the grey plastic is the mean of the `grey` models'
    probabilities, the keeps the mean of the `keep` models'."""

    grey: tuple[Path, ...]
    keep: tuple[Path, ...]

    def describe(self) -> str:
        named = lambda paths: " + ".join(p.stem for p in paths)  # noqa: E731
        return f"grey: {named(self.grey)}; keeps: {named(self.keep)}"


# The photo is read with each of these in turn until one reading is answered (vision.pipeline.read_photo).
# First the mean of perceptron and network for the grey plastic, the perceptron for keeps (the keep
# reading, a Double Keep told by its blob's size, was tuned on the perceptron's keep outlines): on new
# renders it reads more pieces right. Then the perceptron alone, which reads untextured plastic the
# network sees only in part (docs/vision-failure-analysis.md, sessions 9 and 10). Keeps from the mean
# of both (keep pixel precision 0.51 against the perceptron's 0.14) read fewer keeps where there are
# none and more castles' scores right at any confidence, but answered fewer photos right and, on the
# honest unseen35, one wrongly (session 30): not taken.
SHIPPED_READINGS = (PixelModels((SHIPPED_MODEL, SHIPPED_NET), (SHIPPED_MODEL,)),
                    PixelModels((SHIPPED_MODEL,), (SHIPPED_MODEL,)))
# The network alone for the grey plastic, read first instead of the mean where the perceptron vetoed
# much of what the network sees as plastic in the castle (vision.pipeline.pixels_to_read_first).
NETWORK_FOR_GREY = PixelModels((SHIPPED_NET,), (SHIPPED_MODEL,))


def _paths(variable: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in os.environ.get(variable, "").split(os.pathsep) if p)


def readings_from_environment() -> tuple[PixelModels, ...]:
    """CASTELLAN_PIXEL_MODEL names other model files (.npz perceptrons, .onnx networks; several separated
    by the system's path separator, ":" on Linux, are averaged) to read with instead, alone, so a
    candidate can be benchmarked end to end without replacing the shipped ones; CASTELLAN_KEEP_PIXEL_MODEL,
    when set, names the files for the keep class alone."""
    grey = _paths("CASTELLAN_PIXEL_MODEL")
    if not grey:
        return SHIPPED_READINGS
    return (PixelModels(grey, _paths("CASTELLAN_KEEP_PIXEL_MODEL") or grey),)


READINGS = readings_from_environment()
CLASSES = ("other", "grey", "keep")
# Features are computed on a photo downscaled to this long side: the classes need no finer detail,
# and a quarter of the pixels costs a quarter of the time.
FEATURE_SIDE = 640


@dataclass(frozen=True)
class PixelModel:
    mean: np.ndarray
    scale: np.ndarray
    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    def probabilities(self, features: np.ndarray, chunk: int = 16384) -> np.ndarray:
        """(N, F) features -> (N, len(CLASSES)) class probabilities."""
        # Standardisation folded into the first layer; chunks small enough to stay in cache.
        w0 = self.weights[0] / self.scale[:, None]
        b0 = self.biases[0] - (self.mean / self.scale) @ self.weights[0]
        layers = [(w0, b0)] + list(zip(self.weights[1:], self.biases[1:]))
        out = np.empty((features.shape[0], layers[-1][0].shape[1]), np.float32)
        # One BLAS thread: these products are too small to share out, and OpenBLAS's spinning workers
        # cost ten times the CPU when the cores are busy (0.45 against 0.05 CPU-s per photo, measured
        # with two photos read at once), which is how a server or the benchmark reads.
        with threadpool_limits(limits=1, user_api="blas"):
            self._forward(features, layers, out, chunk)
        return out

    @staticmethod
    def _forward(features: np.ndarray, layers: list, out: np.ndarray, chunk: int) -> None:
        for start in range(0, features.shape[0], chunk):
            x = features[start:start + chunk]
            for w, b in layers[:-1]:
                x = x @ w
                x += b
                np.maximum(x, 0.0, out=x)
            z = x @ layers[-1][0]
            z += layers[-1][1]
            z -= z.max(axis=1, keepdims=True)
            np.exp(z, out=z)
            z /= z.sum(axis=1, keepdims=True)
            out[start:start + chunk] = z

    def save(self, path: Path) -> None:
        arrays = {"mean": self.mean, "scale": self.scale}
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            arrays[f"w{i}"], arrays[f"b{i}"] = w, b
        np.savez_compressed(path, **arrays)


class PixelNet:
    """The convolutional pixel model (vision.train_pixel_net), an ONNX file run by OpenCV's dnn module:
    it sees some 40 pixels around each pixel, where the perceptron sees a few."""

    def __init__(self, path: Path) -> None:
        self.net = cv2.dnn.readNetFromONNX(str(path))
        self._lock = threading.Lock()  # one loaded network is shared, and a dnn.Net holds its input

    def image_probabilities(self, features: np.ndarray) -> np.ndarray:
        """(H, W, F) features -> (H, W, len(CLASSES)) probabilities."""
        with self._lock:
            self.net.setInput(channels_first(features.astype(np.float32, copy=False))[None])
            out = self.net.forward()
        return out[0].transpose(1, 2, 0)


def channels_first(image: np.ndarray, rows: int = 4) -> np.ndarray:
    """(H, W, C) -> (C, H, W), the planes one after another as the network takes them.

    Copied a few rows at a time, so each block's transpose stays in cache: for 22 planes of 640 x 480
    about 9 ms, where one transposing copy takes 25-30 and cv2.split with np.stack 20-60."""
    h, w, c = image.shape
    out = np.empty((c, h, w), image.dtype)
    for r in range(0, h, rows):
        out[:, r:r + rows] = image[r:r + rows].transpose(2, 0, 1)
    return out


@lru_cache(maxsize=4)
def load_model(path: Path) -> PixelModel | PixelNet:
    """The pixel model in `path`: a perceptron's arrays (.npz) or a convolutional network (.onnx)."""
    if Path(path).suffix == ".onnx":
        return PixelNet(Path(path))
    with np.load(path) as z:
        n = sum(1 for k in z.files if k.startswith("w"))
        return PixelModel(z["mean"].astype(np.float32), z["scale"].astype(np.float32),
                          tuple(z[f"w{i}"].astype(np.float32) for i in range(n)),
                          tuple(z[f"b{i}"].astype(np.float32) for i in range(n)))


def pixel_features(lab: np.ndarray, hsv: np.ndarray, table_like: np.ndarray, table_like_colour: np.ndarray,
                   border: np.ndarray) -> np.ndarray:
    """(H, W, F) float32 features of every pixel, from the white-balanced photo's CIELAB (OpenCV 8-bit
    encoding) and HSV, and the two table likelihoods (0..1)."""
    L = lab[:, :, 0].astype(np.float32) / 255.0
    a = (lab[:, :, 1].astype(np.float32) - 128.0) / 64.0
    b = (lab[:, :, 2].astype(np.float32) - 128.0) / 64.0
    chroma = np.hypot(a, b)
    s, v = hsv[:, :, 1].astype(np.float32) / 255.0, hsv[:, :, 2].astype(np.float32) / 255.0
    # The table as a whole (its lightness and colour), so the model can tell what "unlike the table" means here.
    tL, ta, tb = (float(np.median(c[border])) for c in (L, a, b))
    t_chroma = float(np.hypot(ta, tb))
    t_spread = float(np.std(L[border]))
    tl, tc = table_like.astype(np.float32), table_like_colour.astype(np.float32)

    def blur(x: np.ndarray, sigma: float) -> np.ndarray:
        return cv2.GaussianBlur(x, (0, 0), sigma)

    gx, gy = cv2.Sobel(L, cv2.CV_32F, 1, 0, ksize=3), cv2.Sobel(L, cv2.CV_32F, 0, 1, ksize=3)
    grad = np.hypot(gx, gy)
    mean3 = blur(L, 3.0)
    local_std = np.sqrt(np.maximum(blur(L * L, 3.0) - mean3 * mean3, 0.0))
    shape = L.shape
    const = lambda c: np.full(shape, c, np.float32)  # noqa: E731
    # Context is kept to a few pixels: wider blurs let the evidence of a wall spill into a small
    # courtyard next to it when the castle is small in the frame.
    feats = [L, a, b, chroma, s, v, tl, tc,
             L - tL, a - ta, b - tb,
             const(tL), const(t_chroma), const(t_spread),
             mean3, blur(chroma, 3.0), blur(tl, 3.0), blur(tc, 3.0),
             blur(grad, 1.5), blur(grad, 4.0), local_std, L - mean3]
    # (OpenCV interleaves the planes four times faster than np.stack; it takes only planes of one type.)
    return cv2.merge([f.astype(np.float32, copy=False) for f in feats])


def class_probabilities(features: np.ndarray, models: Sequence[PixelModel | PixelNet] | PixelModels | None = None,
                        each_model: dict[Path, np.ndarray] | None = None) -> np.ndarray:
    """(H, W, F) features -> (H, W, len(CLASSES)) probabilities: the mean of the given models', or, for
    PixelModels (by default the first of READINGS), grey from its grey models and keeps from its keep models.
    `each_model`, when given, holds each model file's probabilities for these features, computed once
    however many readings combine them."""
    if models is None:
        models = READINGS[0]
    if not isinstance(models, PixelModels):
        return sum(_probabilities(features, m) for m in models) / len(models)
    each = each_model if each_model is not None else {}
    for p in dict.fromkeys(models.grey + models.keep):
        if p not in each:
            each[p] = _probabilities(features, load_model(p))
    probs = sum(each[p] for p in models.grey) / len(models.grey)
    if models.keep != models.grey:
        probs[:, :, 2] = sum(each[p][:, :, 2] for p in models.keep) / len(models.keep)
        probs[:, :, 0] = np.clip(1.0 - probs[:, :, 1] - probs[:, :, 2], 0.0, 1.0)
    return probs


def _probabilities(features: np.ndarray, model: PixelModel | PixelNet) -> np.ndarray:
    if isinstance(model, PixelNet):
        return model.image_probabilities(features)
    h, w, f = features.shape
    return model.probabilities(features.reshape(-1, f)).reshape(h, w, -1)
