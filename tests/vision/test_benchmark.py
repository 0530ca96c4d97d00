"""The benchmark's comparison: a reading is judged up to the lattice's free origin and orientation."""
from __future__ import annotations

import json

from benchmarks.vision_benchmark import (band, classify_walls, compare, corrections, grey_errors, main, true_castle,
                                         wrong_towers_marked)
from scoring import parse_castle
from tests.vision.toyscene import SMALL_CASTLE


def _turned_and_shifted(castle: dict) -> dict:
    """The same castle turned 90 degrees and moved: castellan/1 says scores do not change."""
    def tp(p):
        return [-p[1] + 7, p[0] - 3]
    return {
        "format": "castellan/1",
        "towers": [tp(t) for t in castle["towers"]],
        "walls": [{"from": tp(w["from"]), "to": tp(w["to"])} for w in castle["walls"]],
        "keeps": [dict(k, at=tp(k["at"])) for k in castle["keeps"]],
    }


def test_same_castle_in_another_frame_matches_every_piece():
    truth = parse_castle(SMALL_CASTLE)
    found = parse_castle(_turned_and_shifted(SMALL_CASTLE))
    c = compare(found, truth)
    assert c["tower"] == {"tp": 6, "fp": 0, "fn": 0}
    assert c["short"]["fp"] == c["short"]["fn"] == 0 and c["long"] == {"tp": 3, "fp": 0, "fn": 0}
    assert c["keep"]["tp"] == 2 and c["keep"]["double_ok"] == 2 and c["keep"]["colour_ok"] == 2


def test_a_missing_wall_and_a_wrong_keep_are_counted():
    wrong = json.loads(json.dumps(SMALL_CASTLE))
    wrong["walls"] = wrong["walls"][:-1]  # the middle long wall is missed
    wrong["keeps"][0]["double"] = False
    c = compare(parse_castle(wrong), parse_castle(SMALL_CASTLE))
    assert c["long"] == {"tp": 2, "fp": 0, "fn": 1}
    assert c["keep"]["double_ok"] == 1
    assert corrections(c) == 2  # on the result page: draw the wall, tick Double Keep
    wrong["keeps"][0]["colour"] = "yellow"
    assert corrections(compare(parse_castle(wrong), parse_castle(SMALL_CASTLE))) == 3


def test_the_wrong_grey_pieces_are_named_in_the_truths_frame():
    # A reading turned and moved, with the middle long wall read as a short wall over its first step: the row
    # names both, in the truth's coordinates, so a set's misreads can be counted by kind from its JSON.
    truth = parse_castle(SMALL_CASTLE)
    halved = json.loads(json.dumps(SMALL_CASTLE))
    last = halved["walls"][-1]
    (ax, ay), (bx, by) = last["from"], last["to"]
    halved["walls"][-1] = {"from": [ax, ay], "to": [(ax + bx) // 2, (ay + by) // 2]}
    errors = grey_errors(parse_castle(_turned_and_shifted(halved)), truth)
    long_wall = parse_castle(dict(SMALL_CASTLE, walls=[last])).walls[0]
    short_wall = parse_castle(dict(SMALL_CASTLE, walls=[halved["walls"][-1]])).walls[0]
    assert errors == {"short": {"extra": [(short_wall.a, short_wall.b)], "missing": []},
                      "long": {"extra": [], "missing": [(long_wall.a, long_wall.b)]}}
    assert grey_errors(parse_castle(_turned_and_shifted(SMALL_CASTLE)), truth) == {}


def test_a_spare_keep_wholly_outside_the_photo_is_not_counted_as_missed():
    # Two spare keeps beside the castle: one the photo shows, one the renderer put outside the frame.
    spare_in_view, spare_out_of_view = [9.5, 0.5], [-12.25, 3.5]
    truth_json = {"castle": SMALL_CASTLE,
                  "castle_with_supply": dict(SMALL_CASTLE, keeps=SMALL_CASTLE["keeps"] + [
                      {"colour": "red", "at": spare_in_view}, {"colour": "blue", "at": spare_out_of_view}]),
                  "clutter": [{"kind": "keep", "at": spare_in_view, "visible_px": 412},
                              {"kind": "keep", "at": spare_out_of_view, "visible_px": 0},
                              {"kind": "card", "visible_px": 0}]}
    keeps = [tuple(k.at) for k in true_castle(truth_json).keeps]
    assert tuple(spare_in_view) in keeps and tuple(spare_out_of_view) not in keeps
    assert len(keeps) == len(SMALL_CASTLE["keeps"]) + 1  # the castle's own keeps count however hidden


def test_the_wrong_towers_a_guess_marks_are_counted_in_the_truths_frame():
    # A guess, turned and moved, with the tower at (1, 0) missing and one too many at (3, 0): the page marks
    # the extra tower (towers_to_check) and dashes the missing one (unsure_absent_towers), each in the
    # guess's own frame; a mark on a right tower is not a wrong tower marked.
    guess = json.loads(json.dumps(SMALL_CASTLE))
    guess["towers"] = [t for t in guess["towers"] if t != [1, 0]] + [[3, 0]]
    turned = _turned_and_shifted(dict(guess, keeps=SMALL_CASTLE["keeps"]))
    truth = parse_castle(SMALL_CASTLE)
    found = parse_castle(turned)
    moved = _turned_and_shifted({"towers": [[3, 0], [1, 0], [0, 0]], "walls": [], "keeps": []})["towers"]
    assert wrong_towers_marked(dict(turned, towers_to_check=[moved[0]], unsure_absent_towers=[moved[1]]), found, truth) == [2, 2]
    assert wrong_towers_marked(dict(turned, towers_to_check=[moved[2]]), found, truth) == [0, 2]


def test_condition_bands():
    b = band({"elevation_deg": 30.0, "light_temps_k": [2800, 3000], "table_kind": "felt", "mat_present": True})
    assert b == {"elevation": "25-35", "light": "warm", "table": "felt", "mat": "mat"}
    assert band({"elevation_deg": 80.0, "light_temps_k": [3000, 6500]})["light"] == "mixed"


def test_benchmark_refuses_a_missing_folder(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_truth_masks_answer_for_the_pixel_model_and_photos_without_them_are_left_out(tmp_path, monkeypatch):
    import types

    import cv2
    import numpy as np

    import vision.masks
    import vision.pipeline
    from benchmarks.vision_benchmark import use_truth_masks, with_truth_masks

    monkeypatch.setattr(vision.masks, "learned_probabilities", vision.masks.learned_probabilities)  # restored after
    monkeypatch.setattr(vision.pipeline, "PIXEL_READINGS", vision.pipeline.PIXEL_READINGS)
    items = np.zeros((4, 6), np.uint16)
    items[:, 2:4], items[:, 4:] = 7, 9  # a tower's pixels, then a keep's
    cv2.imwrite(str(tmp_path / "a_mask.png"), items)
    truth = {"pieces": [{"kind": "tower", "mask_id": 7}, {"kind": "keep", "mask_id": 9}]}
    (tmp_path / "a.jpg").write_bytes(b"")
    (tmp_path / "b.jpg").write_bytes(b"")
    logged = []
    assert with_truth_masks([tmp_path / "a.jpg", tmp_path / "b.jpg"], logged.append) == [tmp_path / "a.jpg"]
    assert "b.jpg" in logged[0]
    use_truth_masks(tmp_path / "a.jpg", truth)
    probs = vision.masks.learned_probabilities(types.SimpleNamespace(lab=np.zeros((8, 12, 3), np.uint8)))
    assert probs.shape == (8, 12, 3)
    assert probs[:, :4].argmax(axis=2).tolist() == [[0] * 4] * 8  # table
    assert (probs[:, 4:8].argmax(axis=2) == 1).all() and (probs[:, 8:].argmax(axis=2) == 2).all()


def test_keep_heights_are_tallied_by_the_keeps_own_confidence(tmp_path, capsys):
    # benchmarks.keep_heights: what a keep's doubt is worth, from photos with truth beside them.
    from benchmarks.keep_heights import band_of
    from benchmarks.keep_heights import main as keep_heights_main
    from tests.vision.toyscene import top_down_jpeg

    (tmp_path / "a.jpg").write_bytes(top_down_jpeg())
    (tmp_path / "a.json").write_text(json.dumps({"castle": _turned_and_shifted(SMALL_CASTLE)}))
    wrong = json.loads(json.dumps(SMALL_CASTLE))
    wrong["keeps"][0]["double"] = not wrong["keeps"][0]["double"]  # the same photo, one keep's height changed
    (tmp_path / "b.jpg").write_bytes(top_down_jpeg())
    (tmp_path / "b.json").write_text(json.dumps({"castle": wrong}))
    assert keep_heights_main([str(tmp_path), "--json", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert len(out["keeps"]) == 4
    assert sorted(k["height_right"] for k in out["keeps"]) == [False, True, True, True]
    assert sum(b["wrong"] for b in out["bands"].values()) == 1
    assert band_of(0.2) == band_of(0.25) == "0.25 or less" and band_of(0.49) == "0.25-0.5" and band_of(0.8) == "0.8 or more"
    assert "keep confidence" in capsys.readouterr().out
    assert keep_heights_main([str(tmp_path / "nope")]) == 2
    assert "not found" in capsys.readouterr().err


def test_same_readings_names_the_photos_whose_reading_changed(tmp_path, capsys):
    from benchmarks.same_readings import differences, main

    castle = {"format": "castellan/1", "towers": [[0, 0]], "walls": [], "keeps": []}
    before = {"a.jpg": {"castle": castle, "confidence": 0.9, "refusal": None},
              "b.jpg": {"castle": castle, "confidence": 0.9, "refusal": None},
              "c.jpg": {"castle": None, "confidence": 0.0, "refusal": "too dark"}}
    after = {"a.jpg": dict(before["a.jpg"]), "b.jpg": dict(before["b.jpg"], confidence=0.85), "c.jpg": dict(before["c.jpg"])}
    assert differences(before, after) == ["b.jpg"]
    after["c.jpg"]["castle"] = castle
    assert differences(before, after) == ["b.jpg", "c.jpg"]
    (tmp_path / "before.json").write_text(json.dumps(before))
    (tmp_path / "after.json").write_text(json.dumps(after))
    assert main(["compare", str(tmp_path / "before.json"), str(tmp_path / "after.json")]) == 1
    assert "1 of 3 readings the same" in capsys.readouterr().out
    assert main(["record", str(tmp_path / "out.json"), str(tmp_path / "missing.jpg")]) == 2
    assert "no such photo" in capsys.readouterr().err


def test_wrong_walls_are_sorted_by_how_the_page_points_at_them():
    # The middle long wall read as two short walls with a doubted tower between them (a misidentification
    # the page points at through the tower), and a wall of the ring missed where the reader saw a step
    # barely absent (marked itself); the guess is in another frame than the truth.
    truth = parse_castle(SMALL_CASTLE)
    guess = json.loads(json.dumps(SMALL_CASTLE))
    (ax, ay), (bx, by) = guess["walls"][-1]["from"], guess["walls"][-1]["to"]
    mid = [(ax + bx) // 2, (ay + by) // 2]
    guess["walls"][-1:] = [{"from": [ax, ay], "to": mid}, {"from": mid, "to": [bx, by]}]
    guess["towers"].append(mid)
    ring = guess["walls"].pop(0)
    guess = _turned_and_shifted(guess)
    moved = _turned_and_shifted({"towers": [mid], "walls": [ring], "keeps": []})
    guess.update(towers_to_check=moved["towers"], unsure_absent_walls=moved["walls"])
    walls = sorted(classify_walls(guess, parse_castle(guess), truth))
    assert walls == sorted([("extra", True, False, True)] * 2 + [("missing", True, False, True), ("missing", False, True, False)]
                           + [("right", False, False, False)] * 5)


def test_a_long_wall_read_as_its_halves_and_a_tower_is_one_mixup_either_way_round():
    from benchmarks.wall_marks import long_wall_mixups

    split = json.loads(json.dumps(SMALL_CASTLE))
    (ax, ay), (bx, by) = split["walls"][-1]["from"], split["walls"][-1]["to"]
    mid = [(ax + bx) // 2, (ay + by) // 2]
    split["walls"][-1:] = [{"from": [ax, ay], "to": mid}, {"from": mid, "to": [bx, by]}]
    split["towers"].append(mid)
    built, halves = parse_castle(SMALL_CASTLE), parse_castle(split)
    assert long_wall_mixups(grey_errors(parse_castle(_turned_and_shifted(split)), built)) == 1
    assert long_wall_mixups(grey_errors(built, halves)) == 1
    without_tower = dict(split, towers=SMALL_CASTLE["towers"])  # the halves alone: not the one-tap mix-up
    assert long_wall_mixups(grey_errors(parse_castle(without_tower), built)) == 0


def test_focal_sensitivity_counts_the_readings_a_per_cent_of_focal_length_turns_over():
    from benchmarks.focal_sensitivity import summarise

    def reading(jaccard: float, exact: bool, answered: bool) -> dict:
        return {"jaccard": jaccard, "exact": exact, "answered": answered}

    rows = [
        # Read right and answered; one per cent less focal length puts it on another lattice.
        {"bands": {"elevation": "50-70"}, "readings": {"1.0": reading(1.0, True, True), "0.99": reading(0.2, False, False),
                                                        "1.01": reading(0.95, True, True)}},
        # Refused as it came; a per cent more reads it exactly (answered, but wrong at the other step).
        {"bands": {"elevation": "50-70"}, "readings": {"1.0": reading(0.5, False, False), "0.99": reading(0.55, False, True),
                                                        "1.01": reading(1.0, True, False)}},
        # No EXIF focal length: read once, counted as a photo only.
        {"bands": {"elevation": "70-90"}, "readings": {"1.0": reading(0.9, True, False)}},
    ]
    s = summarise(rows)
    assert s["bands"]["50-70"] == {"photos": 2, "perturbed": 4, "moved": 2, "exact_gained": 1, "exact_lost": 1,
                                   "answer_gained": 1, "answer_lost": 1, "answered_wrong": 1}
    assert s["bands"]["70-90"]["photos"] == 1 and s["bands"]["70-90"].get("perturbed", 0) == 0
    assert s["all"]["perturbed"] == 4 and s["all"]["photos"] == 3


def test_keep_sizes_measure_each_keep_mask_against_the_truth(tmp_path, capsys):
    # benchmarks.keep_sizes: how well a keep's size tells a Double Keep, per keep mask, on renders with
    # their per-pixel truth; a photo without that truth is left out with a word, a missing folder is an error.
    import shutil
    from pathlib import Path

    import numpy as np

    from benchmarks.keep_sizes import auc, main as keep_sizes_main

    samples = Path(__file__).resolve().parents[2] / "sample_photos"
    for suffix in (".jpg", ".json", "_mask.png"):  # 74 degrees: nine keeps, two of them Double Keeps
        shutil.copy(samples / f"photo_009{suffix}", tmp_path / f"photo_009{suffix}")
    for suffix in (".jpg", ".json"):
        shutil.copy(samples / f"photo_009{suffix}", tmp_path / f"no_truth{suffix}")
    assert keep_sizes_main([str(tmp_path), "--json", str(tmp_path / "out.json")]) == 0
    err = capsys.readouterr().err
    assert "no_truth.jpg" in err and "photo_009" not in err
    out = json.loads((tmp_path / "out.json").read_text())
    keeps = out["keeps"]
    assert keeps and {k["photo"] for k in keeps} == {"photo_009.jpg"}
    assert any(k["true_double"] for k in keeps) and not all(k["true_double"] for k in keeps)
    # The render's own mask shows every keep it reads, and a Double Keep bigger than a single keep there.
    singles = [k["area_truth"] / k["single_area"] for k in keeps if not k["true_double"]]
    doubles = [k["area_truth"] / k["single_area"] for k in keeps if k["true_double"]]
    assert min(doubles) > np.median(singles)
    assert out["summary"]["all keeps"]["70-90"]["keeps"] == sum(all(k[f"area_{m}"] > 0 for m in ("truth", "perceptron", "network"))
                                                                for k in keeps)
    assert auc(np.array([2.0, 3.0]), np.array([1.0, 2.0])) == 0.875 and auc(np.array([1.0]), np.zeros(0)) is None
    assert keep_sizes_main([str(tmp_path / "nope")]) == 2
    assert "not found" in capsys.readouterr().err
