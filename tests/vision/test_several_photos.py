"""Several photos of one castle read as one (vision.several_photos): agreement lifts the confidence where
each photo reads a part best, disagreement refuses naming the pieces, and bad input names the photo."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from scoring import parse_castle, score_castle
from scoring.align import Alignment
from tests.vision.toyscene import SMALL_CASTLE, toy_photo
from vision import PhotoError
from vision.confidence import CONFIDENCE_THRESHOLD
from vision.pipeline import PhotoReading
from vision.several_photos import combine_readings, read_photos

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
CASTLE = parse_castle(SMALL_CASTLE)
TRUE_PLAYERS = {c: v["score"] for c, v in score_castle(CASTLE).to_json()["players"].items()}
FACTORS = ("elevation", "fit", "lattice", "pieces", "keeps", "plane", "rules")


def reading_of(castle, **factors: float) -> PhotoReading:
    """A photo's reading as the pipeline returns it: answered when its factors' product reaches the
    threshold, else refused with its guess."""
    f = {k: factors.get(k, 1.0) for k in FACTORS}
    confidence = float(np.prod(list(f.values())))
    refused = confidence < CONFIDENCE_THRESHOLD
    return PhotoReading(castle=None if refused else castle, confidence=confidence,
                        refusal="a keep could not be read clearly" if refused else None,
                        overlay=np.zeros((4, 4, 3), np.uint8), timings={"masks": 0.5}, findings=[],
                        score=None if refused else score_castle(castle), rectification={"factors": f},
                        tentative_castle=castle if refused else None)


def turned(castle, quarter_turns: int, offset=(3, -1)):
    """The same castle as another photo's lattice frame gives it (turned and shifted)."""
    return Alignment(quarter_turns, False, offset).apply(castle)


def with_keep(castle, index: int, **change):
    from dataclasses import replace

    keeps = list(castle.keeps)
    keeps[index] = replace(keeps[index], **change)
    return replace(castle, keeps=tuple(keeps))


def players(reading) -> dict:
    return {c: v["score"] for c, v in reading.to_json()["players"].items()}


def test_each_photo_reading_best_what_the_other_doubts_gives_an_answer():
    # From high up the Double Keep is in doubt; from lower down a wall is: read together, neither is.
    from_above = reading_of(CASTLE, keeps=0.5)
    from_the_side = reading_of(turned(CASTLE, 1), pieces=0.6)
    both = combine_readings([from_above, from_the_side])
    assert from_above.refusal and from_the_side.refusal
    assert both.refusal is None and both.confidence == pytest.approx(1.0)
    assert players(both) == TRUE_PLAYERS
    assert both.rectification["factors"]["keeps"] == 1.0 and len(both.rectification["photos"]) == 2
    assert both.timings["masks"] == pytest.approx(1.0)  # the time of both photos


def test_a_doubt_both_photos_share_stays_a_refusal():
    both = combine_readings([reading_of(CASTLE, keeps=0.5), reading_of(turned(CASTLE, 2), keeps=0.6)])
    assert both.refusal and "same castle" in both.refusal
    assert both.castle is None and both.tentative_castle == turned(CASTLE, 2)  # the surer photo's guess
    assert both.confidence == pytest.approx(0.6)


def test_photos_that_disagree_about_a_keep_are_refused_naming_its_courtyard():
    single = with_keep(CASTLE, 0, double=False)  # the red Double Keep read single in the second photo
    both = combine_readings([reading_of(CASTLE), reading_of(turned(single, 3))])
    assert both.refusal and "do not agree about 1 piece" in both.refusal
    assert "keeps in the courtyard at [0, 0]" in both.refusal
    assert both.castle is None and both.score is None
    assert both.tentative_castle == CASTLE  # the more confident photo's guess, to correct on the result page


def test_photos_that_disagree_about_walls_name_them():
    from dataclasses import replace

    fewer = replace(CASTLE, walls=CASTLE.walls[1:])
    both = combine_readings([reading_of(CASTLE, pieces=0.9), reading_of(fewer, keeps=0.8)])
    assert both.refusal and "a wall from [0, 0] to [1, 0]" in both.refusal


def test_a_photo_read_surely_outweighs_one_read_poorly_that_differs():
    from dataclasses import replace

    fewer = replace(CASTLE, walls=CASTLE.walls[1:])
    sure, poor = reading_of(CASTLE, pieces=0.9), reading_of(turned(fewer, 1), pieces=0.1)
    both = combine_readings([poor, sure])
    # Right only where the poor reading is wrong: 0.9 * 0.9 / (0.9 * 0.9 + 0.1).
    assert both.refusal is None and both.confidence == pytest.approx(0.81 / 0.91)
    assert players(both) == TRUE_PLAYERS
    assert any("a wall from [0, 0] to [1, 0]" in f["message"] for f in both.findings)
    # Two sure photos that differ refuse: one of them must be wrong.
    assert combine_readings([reading_of(fewer, pieces=0.8), sure]).refusal
    # And however sure one is, another photo answered on its own contradicts it.
    assert reading_of(fewer, pieces=0.85).refusal is None
    assert combine_readings([reading_of(fewer, pieces=0.85), reading_of(CASTLE)]).refusal


def test_photos_of_two_castles_are_refused_as_such():
    other = parse_castle({"format": "castellan/1", "towers": [[0, 0], [5, 0], [0, 5], [5, 5], [9, 9]],
                          "walls": [], "keeps": []})
    both = combine_readings([reading_of(CASTLE, pieces=0.9), reading_of(other, pieces=0.8)])
    assert both.refusal and "another castle" in both.refusal
    # A photo read near 0 matches little of anything: the well-read photo answers, naming it.
    both = combine_readings([reading_of(CASTLE), reading_of(other, pieces=0.05)])
    assert both.refusal is None and any("another castle" in f["message"] for f in both.findings)


def test_a_photo_that_shows_no_castle_leaves_the_reading_to_the_others():
    blank = PhotoReading(castle=None, confidence=0.0, refusal="no castle found", overlay=np.zeros((4, 4, 3), np.uint8),
                         timings={}, findings=[], rectification={"factors": {"castle": 0.0}})
    both = combine_readings([blank, reading_of(CASTLE, pieces=0.9)])
    assert both.refusal is None and players(both) == TRUE_PLAYERS
    assert any("photo 1 could not be read" in f["message"] for f in both.findings)
    json.dumps(both.to_json())


def test_two_rendered_photos_of_one_castle_are_read_together():
    photos = [toy_photo(SMALL_CASTLE, e, a) for e, a in ((70, 120), (55, 30))]
    from vision import read_photo

    alone = [read_photo(p) for p in photos]
    both = read_photos(photos)
    assert both.refusal is None, both.refusal
    assert players(both) == TRUE_PLAYERS
    # Agreeing photos are at least as sure as the surer of them.
    assert both.confidence >= max(r.confidence for r in alone) - 1e-9


def test_a_file_among_the_photos_that_is_not_a_photo_is_named(tmp_path):
    photo = tmp_path / "castle.jpg"
    photo.write_bytes(toy_photo(SMALL_CASTLE, 70, 120, size=(320, 240)))
    bad = tmp_path / "notes.jpg"
    bad.write_bytes(b"shopping list: milk, eggs")
    with pytest.raises(PhotoError, match="photo 2"):
        read_photos([photo.read_bytes(), bad.read_bytes()])
    proc = subprocess.run([sys.executable, "-m", "castellan.cli", "score", str(photo), str(bad)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "photo 2" in proc.stderr and "not an image" in proc.stderr


def test_a_castle_file_is_scored_on_its_own(tmp_path):
    castle = tmp_path / "castle.json"
    castle.write_text(json.dumps(SMALL_CASTLE))
    proc = subprocess.run([sys.executable, "-m", "castellan.cli", "score", str(castle), str(castle)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "one castellan/1 file on its own" in proc.stderr


def test_the_benchmark_reads_each_castles_photos_alone_and_together(tmp_path, capsys):
    from benchmarks import several_photos

    for view, (e, a) in enumerate(((70, 120), (55, 30))):
        photo = tmp_path / ("views" if view else "first") / f"castle_{view}.jpg"
        photo.parent.mkdir(exist_ok=True)
        photo.write_bytes(toy_photo(SMALL_CASTLE, e, a))
        photo.with_suffix(".json").write_text(json.dumps({"castle": SMALL_CASTLE, "view": view,
                                                          "conditions": {"seed": 7, "elevation_deg": e}}))
    out = tmp_path / "result.json"
    assert several_photos.main([str(tmp_path / "first"), str(tmp_path / "views"), "--json", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    together = result["summary"]["castles_by_their_photos_together"]
    assert (result["castles"], result["photos"]) == (1, 2)
    assert (together["answered"], together["right"], together["wrong"]) == (1, 1, 0)
    assert "read together" in capsys.readouterr().out
    assert several_photos.main([str(tmp_path / "first")]) == 2  # one photo of the castle: nothing to combine
