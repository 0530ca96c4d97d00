"""The learned pixel classes: the model's arithmetic, its file, and the training labels."""
from __future__ import annotations

import numpy as np

from vision.pixels import CLASSES, PixelModel, PixelNet, load_model
from vision.train_pixels import truth_labels


def _reference(model: PixelModel, x: np.ndarray) -> np.ndarray:
    """The network as defined: standardise, ReLU layers, softmax."""
    h = (x - model.mean) / model.scale
    for w, b in zip(model.weights[:-1], model.biases[:-1]):
        h = np.maximum(h @ w + b, 0)
    z = h @ model.weights[-1] + model.biases[-1]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _random_model(rng: np.random.Generator, n_features: int = 5) -> PixelModel:
    sizes = (n_features, 7, 6, len(CLASSES))
    return PixelModel(rng.normal(size=n_features).astype(np.float32), rng.uniform(0.5, 2, n_features).astype(np.float32),
                      tuple(rng.normal(size=(a, b)).astype(np.float32) for a, b in zip(sizes, sizes[1:])),
                      tuple(rng.normal(size=b).astype(np.float32) for b in sizes[1:]))


def test_the_fast_evaluation_is_the_network_it_stores():
    rng = np.random.default_rng(0)
    model = _random_model(rng)
    x = rng.normal(size=(1000, 5)).astype(np.float32)
    fast = model.probabilities(x, chunk=128)  # several chunks and a partial last one
    assert np.allclose(fast, _reference(model, x), atol=1e-5)
    assert np.allclose(fast.sum(axis=1), 1.0, atol=1e-5)


def test_the_reader_takes_the_mean_of_its_models():
    from vision.pixels import class_probabilities

    rng = np.random.default_rng(4)
    a, b = _random_model(rng), _random_model(rng)
    feats = rng.normal(size=(6, 7, 5)).astype(np.float32)
    each = [m.probabilities(feats.reshape(-1, 5)).reshape(6, 7, -1) for m in (a, b)]
    assert np.allclose(class_probabilities(feats, [a, b]), (each[0] + each[1]) / 2, atol=1e-6)
    assert not np.allclose(each[0], each[1], atol=0.05)  # the two models do differ


def test_a_saved_model_loads_unchanged(tmp_path):
    model = _random_model(np.random.default_rng(1))
    model.save(tmp_path / "m.npz")
    loaded = load_model.__wrapped__(tmp_path / "m.npz")
    x = np.random.default_rng(2).normal(size=(50, 5)).astype(np.float32)
    assert np.allclose(loaded.probabilities(x), model.probabilities(x))


def test_the_models_read_the_features_of_any_photo_size():
    # Phones and uploads give every aspect ratio; odd sizes meet the network's halving and doubling.
    from vision.masks import colour_layers, learned_features
    from vision.pixels import SHIPPED_MODEL, SHIPPED_NET, class_probabilities

    rng = np.random.default_rng(3)
    img = rng.integers(60, 200, (75, 107, 3)).astype(np.uint8)
    feats, _ = learned_features(colour_layers(img))
    for models in ([load_model(SHIPPED_MODEL)], [load_model(SHIPPED_NET)], None):  # None: as the reader does
        probs = class_probabilities(feats, models)
        assert probs.shape == feats.shape[:2] + (len(CLASSES),), models
        assert np.allclose(probs.sum(axis=2), 1.0, atol=1e-4) and probs.min() >= 0.0, models


def test_a_model_file_is_read_by_its_kind():
    from vision.pixels import SHIPPED_MODEL, SHIPPED_NET

    assert isinstance(load_model(SHIPPED_MODEL), PixelModel) and isinstance(load_model(SHIPPED_NET), PixelNet)


def test_training_labels_come_from_the_truth_outlines():
    square = lambda x, y, s: [[x, y], [x + s, y], [x + s, y + s], [x, y + s]]  # noqa: E731
    truth = {"pieces": [{"kind": "tower", "outline_px": square(10, 10, 20)},
                        {"kind": "keep", "outline_px": square(50, 10, 10)},
                        {"kind": "long_wall", "outline_px": square(10, 40, 30)}],
             "clutter": [{"kind": "keep", "outline_px": square(25, 25, 10)}],  # overlaps the tower's corner
             "mat": {"corners_px": square(60, 50, 30)}}
    labels = truth_labels(truth, (100, 100), 1.0)
    assert labels[20, 15] == 1 and labels[55, 25] == 1  # grey pieces
    assert labels[15, 55] == 2  # a keep
    assert labels[5, 5] == 0  # the table
    assert labels[27, 27] == -1  # keep over tower: either could be right
    assert labels[10, 20] == -1 and labels[9, 20] == -1  # the border between classes is left out
    assert (labels[55:75, 65:85] == -1).all()  # the mat's paper is left out
    # Halving the photo halves the outlines.
    assert truth_labels(truth, (50, 50), 0.5)[10, 8] == 1


def test_training_labels_prefer_the_renderers_item_labels():
    truth = {"pieces": [{"kind": "tower", "mask_id": 1, "outline_px": [[0, 0], [99, 0], [99, 99], [0, 99]]},
                        {"kind": "keep", "mask_id": 2, "outline_px": [[0, 0], [1, 0], [1, 1]]}],
             "clutter": [{"kind": "card", "mask_id": 3, "outline_px": [[0, 0], [1, 0], [1, 1]]}]}
    items = np.zeros((40, 40), np.uint16)
    items[5:15, 5:15] = 1  # what the camera saw of the tower: not its whole outline
    items[20:30, 5:15] = 2
    items[20:30, 20:30] = 3
    labels = truth_labels(truth, (20, 20), 0.5, items)  # at half the photo's size
    assert labels[5, 5] == 1 and labels[12, 5] == 2
    assert labels[12, 12] == 0 and labels[2, 15] == 0  # a card is clutter, like the table
    assert labels[2, 2] == -1  # the tower's edge


def test_a_candidate_model_named_in_the_environment_is_the_one_read_with(tmp_path):
    # Benchmarks compare a candidate model end to end without replacing the shipped file.
    import os
    import subprocess
    import sys

    candidate = tmp_path / "candidate.npz"
    _random_model(np.random.default_rng(1), n_features=3).save(candidate)
    code = ("from vision.pixels import load_model, READINGS; (r,) = READINGS; "
            "print(*r.grey, *r.keep, load_model(r.grey[0]).mean.shape[0])")
    env = {**os.environ, "CASTELLAN_PIXEL_MODEL": str(candidate)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split()
    assert out == [str(candidate), str(candidate), "3"]  # read alone, for both classes


def test_keeps_can_be_read_by_other_models_than_the_grey_plastic(tmp_path):
    # CASTELLAN_KEEP_PIXEL_MODEL: grey from one set of models, keeps from another (a candidate network
    # for the plastic while the keep reading keeps the perceptron it was tuned on).
    import os
    import subprocess
    import sys

    for name, seed in (("grey.npz", 5), ("keep.npz", 6)):
        _random_model(np.random.default_rng(seed), n_features=22).save(tmp_path / name)
    code = ("import numpy as np; from vision.pixels import class_probabilities, load_model, READINGS\n"
            "(r,) = READINGS\n"
            "f = np.random.default_rng(7).normal(size=(9, 11, 22)).astype(np.float32)\n"
            "p = class_probabilities(f)\n"
            "g, k = (class_probabilities(f, [load_model(m)]) for m in (r.grey[0], r.keep[0]))\n"
            "print(np.allclose(p[..., 1], g[..., 1]), np.allclose(p[..., 2], k[..., 2]), bool(p.min() >= 0))")
    env = {**os.environ, "CASTELLAN_PIXEL_MODEL": str(tmp_path / "grey.npz"), "CASTELLAN_KEEP_PIXEL_MODEL": str(tmp_path / "keep.npz")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split()
    assert out == ["True", "True", "True"]


def test_training_windows_keep_features_and_labels_aligned():
    # The network learns from windows cut from a photo's features and labels: the same window of both,
    # most of them around the pieces, the photo reflected beyond its edges with its labels unknown there.
    from vision.train_pixel_net import crops_around_pieces

    h, w = 60, 80
    feats = np.zeros((h, w, 2), np.float32)
    feats[:, :, 0] = np.arange(w)[None, :]
    feats[:, :, 1] = np.arange(h)[:, None]
    labels = np.zeros((h, w), np.int8)
    labels[20:30, 50:60] = 1
    x, y = crops_around_pieces(feats, labels, np.random.default_rng(0), size=16, near=5, anywhere=3)
    assert x.shape == (8, 2, 16, 16) and y.shape == (8, 16, 16)
    for fx, ly in zip(x, y):
        inside = ly >= 0
        cols, rows = fx[0].astype(int), fx[1].astype(int)
        assert (ly[inside] == labels[rows[inside], cols[inside]]).all()
    assert all((ly == 1).any() for ly in y[:5])  # the "near" windows show the piece
