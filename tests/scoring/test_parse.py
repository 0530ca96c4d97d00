"""castellan/1 parsing: malformed input is refused with a message that names the entry."""
import json

import pytest

from scoring import CastleFormatError, parse_castle


def doc(**over):
    d = {"format": "castellan/1", "towers": [[0, 0], [1, 0]], "walls": [{"from": [0, 0], "to": [1, 0]}], "keeps": []}
    d.update(over)
    return d


@pytest.mark.parametrize("over, message", [
    ({"walls": [{"from": [0, 0], "to": [1, 0]}] * 7 + [{"from": [1, 2], "to": [2, 3]}]}, "walls[7]: diagonal wall from [1, 2] to [2, 3]"),
    ({"walls": [{"from": [0, 0], "to": [3, 0]}]}, "walls[0]: wall from [0, 0] to [3, 0] has length 3"),
    ({"walls": [{"from": [0, 0], "to": [0, 0]}]}, "walls[0]: wall from [0, 0] to [0, 0] has length 0"),
    ({"walls": [{"from": [0, 0], "to": [1, 0], "kind": "long"}]}, "walls[0]: kind 'long' but the wall"),
    ({"walls": [{"from": [0, 0]}]}, "walls[0]: expected"),
    ({"towers": [[0, 0], [0.5, 1]]}, "towers[1]: [0.5, 1] is not on the lattice"),
    ({"towers": [[0, "a"]]}, "towers[0]:"),
    ({"towers": "none"}, "towers: expected a list"),
    ({"keeps": [{"colour": "purple", "at": [0.5, 0.5]}]}, "keeps[0].colour"),
    ({"keeps": [{"colour": "red", "at": [0.5]}]}, "keeps[0].at"),
    ({"keeps": [{"colour": "red", "at": [0.5, 0.5], "double": "yes"}]}, "keeps[0].double"),
    ({"format": "castellan/2"}, "format: expected \"castellan/1\""),
    ({"players": ["red", "red"]}, "players:"),
    ({"sets": 3}, "sets: expected 1 or 2"),
])
def test_malformed_entries_are_named(over, message):
    with pytest.raises(CastleFormatError) as e:
        parse_castle(doc(**over))
    assert message in str(e.value)


def test_not_json_and_not_an_object_are_refused():
    with pytest.raises(CastleFormatError, match="not valid JSON"):
        parse_castle("{towers")
    with pytest.raises(CastleFormatError, match="JSON object"):
        parse_castle("[1, 2]")


def test_round_trip_keeps_unknown_keys_and_normalises_walls():
    d = doc(walls=[{"from": [1, 0], "to": [0, 0]}], note="kept", keeps=[{"colour": "red", "at": [0.5, 0.5], "double": True, "px": [1, 2]}])
    c = parse_castle(json.dumps(d))
    assert c.walls[0].a == (0, 0) and c.walls[0].kind == "short"
    out = c.to_json()
    assert out["note"] == "kept" and out["keeps"][0]["double"] is True
    assert parse_castle(out) == c


def test_whole_number_floats_are_lattice_points():
    assert parse_castle(doc(towers=[[1.0, 2.0]])).towers == ((1, 2),)
