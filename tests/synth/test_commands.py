"""`castellan render` and `castellan synth` from the command line, on tiny images."""
import json

import cv2
import pytest

from castellan.cli import main
from scoring import parse_castle


@pytest.fixture
def castle_file(tmp_path, small_castle):
    path = tmp_path / "castle.json"
    path.write_text(json.dumps(small_castle))
    return path


def test_render_writes_photo_and_ground_truth(tmp_path, castle_file, small_castle, capsys):
    out = tmp_path / "shot.jpg"
    code = main(["render", str(castle_file), "-o", str(out), "--seed", "4", "--width", "160", "--height", "120",
                 "--spp", "2", "--mask"])
    assert code == 0
    assert cv2.imread(str(out)).shape == (120, 160, 3)
    truth = json.loads(out.with_suffix(".json").read_text())
    assert parse_castle(truth["castle"]) == parse_castle(small_castle)
    assert truth["seed"] == 4
    assert (tmp_path / "shot_mask.png").exists()
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ('{"format": "castellan/1", "towers": [[0, 0.5]]}', "tower"),
    ('{"format": "castellan/1", "towers": [], "walls": []}', "nothing to render"),
])
def test_render_refuses_a_bad_castle_file(tmp_path, content, message, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code = main(["render", str(bad), "-o", str(tmp_path / "x.jpg"), "--width", "160", "--height", "120"])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.jpg").exists()


def test_render_refuses_missing_file_and_bad_options(tmp_path, castle_file, capsys):
    assert main(["render", str(tmp_path / "nope.json"), "-o", str(tmp_path / "x.jpg")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["render", str(castle_file), "-o", str(tmp_path / "x.png")]) == 2
    assert ".jpg" in capsys.readouterr().err
    assert main(["render", str(castle_file), "-o", str(tmp_path / "x.jpg"), "--spp", "0"]) == 2
    assert "--spp" in capsys.readouterr().err


def test_synth_writes_a_set_with_an_index(tmp_path, capsys):
    out = tmp_path / "set"
    code = main(["synth", "--count", "2", "--out", str(out), "--width", "160", "--height", "120", "--spp", "1",
                 "--quiet"])
    assert code == 0
    index = json.loads((out / "index.json").read_text())
    assert [e["image"] for e in index] == ["photo_000.jpg", "photo_001.jpg"]
    assert [e["players"] for e in index] == [2, 3]
    for entry in index:
        truth = json.loads((out / entry["truth"]).read_text())
        assert truth["pieces"] and truth["camera"]["width"] == 160


def test_synth_refuses_a_bad_count(tmp_path, capsys):
    assert main(["synth", "--count", "0", "--out", str(tmp_path)]) == 2
    assert "--count" in capsys.readouterr().err


def test_synth_renders_only_the_photos_taken_from_high_enough_up(tmp_path):
    from synth.conditions import draw_conditions

    out = tmp_path / "set"
    high = [i for i in range(6) if draw_conditions(20 + i).elevation_deg >= 60]
    assert 0 < len(high) < 6  # (seeds chosen so some are skipped)
    code = main(["synth", "--count", "6", "--seed", "20", "--out", str(out), "--width", "160", "--height", "120",
                 "--spp", "1", "--min-elevation", "60", "--quiet", "--no-masks"])
    assert code == 0
    index = json.loads((out / "index.json").read_text())
    # Each photo keeps the seed and name it has in the whole set.
    assert [(e["image"], e["seed"]) for e in index] == [(f"photo_{i:03d}.jpg", 20 + i) for i in high]
    assert all(e["elevation_deg"] >= 60 for e in index)
    assert main(["synth", "--count", "1", "--out", str(out), "--min-elevation", "95"]) == 2


def test_synth_photographs_the_same_scenes_again_from_another_camera(tmp_path):
    first, again = tmp_path / "first", tmp_path / "again"
    for out, view in ((first, []), (again, ["--view", "1"])):
        assert main(["synth", "--count", "2", "--seed", "30", "--out", str(out), "--width", "160", "--height", "120",
                     "--spp", "1", "--quiet", "--no-masks", *view]) == 0
    for i in range(2):
        a = json.loads((first / f"photo_{i:03d}.json").read_text())
        b = json.loads((again / f"photo_{i:03d}_v1.json").read_text())
        # The same castle on the same table under the same lights, seen by another camera.
        assert a["castle"] == b["castle"] and b["view"] == 1
        assert a["conditions"]["table"] == b["conditions"]["table"] and a["conditions"]["seed"] == b["conditions"]["seed"]
        assert a["conditions"]["azimuth_deg"] != b["conditions"]["azimuth_deg"]
    assert main(["synth", "--count", "1", "--out", str(again), "--view", "-1"]) == 2
    # A second process can take the set's second half: each photo keeps its seed, castle and name.
    half = tmp_path / "half"
    assert main(["synth", "--count", "2", "--start", "1", "--seed", "30", "--out", str(half), "--width", "160",
                 "--height", "120", "--spp", "1", "--quiet", "--no-masks", "--view", "1"]) == 0
    assert sorted(p.name for p in half.glob("*.jpg")) == ["photo_001_v1.jpg"]
    assert json.loads((half / "photo_001_v1.json").read_text())["castle"] == \
        json.loads((again / "photo_001_v1.json").read_text())["castle"]
    assert main(["synth", "--count", "2", "--start", "2", "--out", str(half)]) == 2
