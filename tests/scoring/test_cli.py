"""The castellan command: tables, JSON, and exit codes (0 scored, 2 bad input)."""
import json

from castellan.cli import main
from scoring.generate import random_finished_castle


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_score_prints_a_table_with_courtyards_players_winner_and_findings(tmp_path, capsys):
    path = write(tmp_path, "c.json", json.dumps(random_finished_castle(3, ["red", "blue"]).to_json()))
    assert main(["score", path]) == 0
    out = capsys.readouterr().out
    for heading in ("Courtyards:", "Players:", "Winner:", "Findings:"):
        assert heading in out


def test_score_json_is_castellan_score(tmp_path, capsys):
    path = write(tmp_path, "c.json", json.dumps(random_finished_castle(3, ["red", "blue"]).to_json()))
    assert main(["score", path, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["format"] == "castellan-score/1"
    assert set(result["players"]) == {"red", "blue"} and result["castle"]["format"] == "castellan/1"
    assert sum(c["points"] for c in result["courtyards"]) == sum(p["score"] for p in result["players"].values())


def test_bad_input_exits_2_with_the_entry_named(tmp_path, capsys):
    path = write(tmp_path, "bad.json", json.dumps({"format": "castellan/1", "walls": [{"from": [1, 2], "to": [2, 3]}]}))
    assert main(["score", path]) == 2
    err = capsys.readouterr().err
    assert "walls[0]: diagonal wall from [1, 2] to [2, 3]" in err and "Traceback" not in err


def test_missing_file_and_broken_json_exit_2(tmp_path, capsys):
    assert main(["score", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["score", write(tmp_path, "x.json", "{not json")]) == 2
    assert "not valid JSON (line 1" in capsys.readouterr().err


def test_check_move_reports_verdict(tmp_path, capsys):
    before = {"format": "castellan/1", "towers": [[0, 0]], "walls": [], "keeps": []}
    after = {"format": "castellan/1", "towers": [[0, 0], [1, 0]], "walls": [{"from": [0, 0], "to": [1, 0]}], "keeps": []}
    b, a = write(tmp_path, "b.json", json.dumps(before)), write(tmp_path, "a.json", json.dumps(after))
    assert main(["check-move", b, a, "--player", "red"]) == 0
    assert "LEGAL" in capsys.readouterr().out
    assert main(["check-move", a, b, "--player", "red", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["legal"] is False and any(f["rule"] == "T1" for f in verdict["findings"])


def test_check_move_takes_photos_and_refuses_one_it_cannot_read(tmp_path, capsys):
    import numpy as np
    from PIL import Image

    after = {"format": "castellan/1", "towers": [[0, 0]], "walls": [], "keeps": []}
    a = write(tmp_path, "a.json", json.dumps(after))
    photo = tmp_path / "table.jpg"  # an empty table: no castle to read
    Image.fromarray(np.full((480, 640, 3), (150, 110, 70), np.uint8)).save(photo)
    assert main(["check-move", str(photo), a, "--player", "red"]) == 2
    err = capsys.readouterr().err
    assert "table.jpg: the castle could not be read" in err and "castellan/1 JSON instead" in err
    (tmp_path / "junk.png").write_bytes(b"not an image at all")
    assert main(["check-move", a, str(tmp_path / "junk.png"), "--player", "red"]) == 2
    assert "junk.png" in capsys.readouterr().err


def test_a_photo_readings_own_doubts_are_listed_for_the_player_to_check():
    from castellan.commands.report import reader_notes

    keep = {"rule": "C5", "severity": "notice",
            "message": "one blue keep nearly looks stacked but was read as a single keep: if it is a Double Keep, its courtyard scores double"}
    text = reader_notes([keep, {"rule": "G1", "severity": "violation", "message": "not the reader's"}])
    assert "check these on the table" in text and "one blue keep nearly looks stacked" in text
    assert "not the reader's" not in text
    assert reader_notes([]) == ""  # a reading without doubts adds nothing to the table
