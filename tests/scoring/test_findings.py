"""Each finding is raised by a minimal castle that shows it, and not by a legal one."""
import pytest

from scoring import score_castle
from scoring.generate import random_finished_castle

from .build import castle, merge, ring

SQUARE = ring(0, 0, 1, 1)


def rules_of(c, severity=None):
    return {f.rule for f in score_castle(c).findings if severity is None or f.severity == severity}


def legal_square():
    return castle(*SQUARE, [("red", (0.5, 0.5), False)], players=["red", "blue"])


def test_legal_square_has_no_violations():
    assert rules_of(legal_square(), "violation") == set()


@pytest.mark.parametrize("name, build, rule", [
    ("two towers on one point", lambda: castle(SQUARE[0] + [(0, 0)], SQUARE[1], [("red", (0.5, 0.5), False)]), "G3"),
    ("two walls on one edge", lambda: castle(SQUARE[0], SQUARE[1] + [((0, 0), (1, 0))], [("red", (0.5, 0.5), False)]), "G3"),
    ("a tower under a long wall's middle", lambda: castle([(0, 0), (1, 0), (2, 0)], [((0, 0), (2, 0))]), "G3"),
    ("a wall ending under a long wall's middle", lambda: castle([(0, 0), (2, 0), (1, 1)], [((0, 0), (2, 0)), ((1, 0), (1, 1))]), "G4"),
    ("a second castle", lambda: castle(SQUARE[0] + [(5, 5), (6, 5)], SQUARE[1] + [((5, 5), (6, 5))], [("red", (0.5, 0.5), False)]), "G6"),
    ("an unclaimed courtyard", lambda: castle(*SQUARE), "C7"),
    ("a courtyard claimed by two colours", lambda: castle(*SQUARE, [("red", (0.3, 0.5), False), ("blue", (0.7, 0.5), False)]), "C2"),
    ("two Double Keeps of one colour", lambda: castle(*merge(SQUARE, ring(1, 0, 2, 1)), [("red", (0.5, 0.5), True), ("red", (1.5, 0.5), True)]), "C5"),
    ("a keep standing on a wall", lambda: castle(*SQUARE, [("red", (0.5, 0.0), False)]), "G7"),
    ("more towers than one set holds", lambda: castle([(x, 0) for x in range(33)], [((x, 0), (x + 1, 0)) for x in range(32)], players=["red", "blue"]), "components"),
])
def test_minimal_castle_raises_the_violation(name, build, rule):
    assert rule in rules_of(build(), "violation"), name


def test_two_double_keeps_of_different_colours_are_fine():
    c = castle(*merge(SQUARE, ring(1, 0, 2, 1)), [("red", (0.5, 0.5), True), ("blue", (1.5, 0.5), True)])
    assert "C5" not in rules_of(c)


def test_unused_grey_pieces_are_a_warning_and_a_full_set_is_not():
    assert "components" in rules_of(legal_square(), "warning")
    finished = random_finished_castle(7, ["red", "blue"])
    used_all = len(finished.towers) == 32 and len(finished.walls) == 56
    assert used_all == ("components" not in rules_of(finished, "warning"))


def test_open_wall_ends_and_towerless_junctions_are_notices():
    c = castle([(0, 0)], [((0, 0), (1, 0)), ((1, 0), (1, 1))])
    notices = [f for f in score_castle(c).findings if f.severity == "notice"]
    messages = " ".join(f.message for f in notices)
    assert "meet at [1, 0] with no tower" in messages
    assert "open end at [1, 1]" in messages
    assert rules_of(legal_square(), "notice") == set()


def test_more_than_ten_keeps_of_a_colour_is_a_c8_notice_not_a_violation():
    towers, walls = ring(0, 0, 11, 1)
    for x in range(1, 11):
        towers, walls = merge((towers, walls), ([], [((x, 0), (x, 1))]))
    keeps = [("red", (x + 0.5, 0.5), False) for x in range(11)]
    c = castle(towers, walls, keeps, players=["red", "blue"])
    assert "C8" in rules_of(c, "notice")
    assert "C8" not in rules_of(c, "violation")


def test_findings_carry_rule_severity_message_and_location():
    f = next(f for f in score_castle(castle(*SQUARE)).findings if f.rule == "C7")
    j = f.to_json()
    assert j["severity"] == "violation" and "not claimed" in j["message"] and j["at"] == [[0, 0]]
