"""Hand-built castles with known scores, each showing one rule."""
from scoring import score_castle

from .build import castle, merge, ring


def test_square_of_four_towers_scores_four():
    # S2: one point per tower around the courtyard.
    towers, walls = ring(0, 0, 1, 1)
    s = score_castle(castle(towers, walls, [("red", (0.5, 0.5), False)], players=["red", "blue"]))
    assert [c.points for c in s.courtyards] == [4]
    assert s.player("red").score == 4 and s.player("blue").score == 0
    assert s.winners == ("red",)


def test_extra_tower_in_one_side_opposite_a_long_wall_scores_five():
    # S2 and G3: a 2x2 courtyard with short walls and a middle tower below, long walls elsewhere;
    # no tower can stand under a long wall's middle, so only the five towers count.
    towers = [(0, 0), (1, 0), (2, 0), (0, 2), (2, 2)]
    walls = [((0, 0), (1, 0)), ((1, 0), (2, 0)), ((0, 2), (2, 2)), ((0, 0), (0, 2)), ((2, 0), (2, 2))]
    s = score_castle(castle(towers, walls, [("blue", (1.0, 1.0), False)]))
    assert len(s.courtyards) == 1 and len(s.courtyards[0].courtyard.cells) == 4
    assert s.courtyards[0].towers == 5 and s.player("blue").score == 5


def test_dividing_wall_tower_counts_for_both_courtyards():
    # S2: a tower on a dividing wall counts for every courtyard it touches.
    towers, walls = merge(ring(0, 0, 2, 1), ([(1, 0), (1, 1)], [((1, 0), (1, 1))]))
    s = score_castle(castle(towers, walls, [("red", (0.5, 0.5), False), ("red", (1.5, 0.5), False)]))
    assert [c.towers for c in s.courtyards] == [4, 4]
    assert s.player("red").score == 8


def test_tower_jutting_into_a_courtyard_raises_its_value():
    # S2: towers added inside a courtyard (on walls built into it) raise its value.
    towers, walls = merge(ring(0, 0, 3, 3), ([(1, 1)], [((1, 0), (1, 1))]))
    s = score_castle(castle(towers, walls, [("yellow", (2.5, 2.5), False)]))
    assert len(s.courtyards) == 1
    assert s.courtyards[0].towers == 12 + 1


def test_nested_courtyards_are_scored_separately():
    # C1: a courtyard inside a courtyard; the outer one does not include the inner one's cells,
    # and the inner ring does not touch the outer so neither counts the other's towers.
    outer, inner = ring(0, 0, 5, 5), ring(2, 2, 3, 3)
    towers, walls = merge(outer, inner, ([], []))
    # The inner ring must connect to the castle (G6): a wall from the outer ring to it.
    towers, walls = merge((towers, walls), ([(1, 2)], [((0, 2), (1, 2)), ((1, 2), (2, 2))]))
    s = score_castle(castle(towers, walls, [("red", (0.5, 0.5), False), ("blue", (2.5, 2.5), False)]))
    by_owner = {c.owner: c for c in s.courtyards}
    assert len(by_owner["blue"].courtyard.cells) == 1 and by_owner["blue"].towers == 4
    assert len(by_owner["red"].courtyard.cells) == 24
    # the outer courtyard touches all 20 ring towers, the 4 inner ones and the tower at (1, 2)
    assert by_owner["red"].towers == 20 + 4 + 1
    assert not [f for f in s.findings if f.severity == "violation"]


def test_double_keep_scores_double():
    # S3: a Double Keep courtyard counts double; S5 counts the Double Keep as two keeps.
    towers, walls = ring(0, 0, 1, 1)
    s = score_castle(castle(towers, walls, [("green", (0.5, 0.5), True)]))
    assert s.courtyards[0].points == 8 and s.courtyards[0].double
    assert s.player("green").keeps == 2


def test_tie_on_points_goes_to_more_keeps_then_shared():
    # S5: red 8 with one Double Keep (2 keeps) vs blue 8 with two keeps: tied on keeps too -> shared.
    red = ring(0, 0, 1, 1)
    blue = merge(ring(1, 0, 2, 1), ring(2, 0, 3, 1))
    towers, walls = merge(red, blue)
    keeps = [("red", (0.5, 0.5), True), ("blue", (1.5, 0.5), False), ("blue", (2.5, 0.5), False)]
    s = score_castle(castle(towers, walls, keeps))
    assert (s.player("red").score, s.player("blue").score) == (8, 8)
    assert (s.player("red").keeps, s.player("blue").keeps) == (2, 2)
    assert set(s.winners) == {"red", "blue"}
    # Red with a single keep in a courtyard worth 8: still 8-8, but blue has more keeps and wins.
    red2 = ring(0, 0, 1, 3)  # 1x3 courtyard with 8 towers
    towers, walls = merge(red2, blue)
    keeps = [("red", (0.5, 0.5), False), ("blue", (1.5, 0.5), False), ("blue", (2.5, 0.5), False)]
    s = score_castle(castle(towers, walls, keeps))
    assert (s.player("red").score, s.player("blue").score) == (8, 8)
    assert s.winners == ("blue",)


def test_open_corner_does_not_close_a_courtyard():
    # C1: a gap at a lattice point without a tower leaves the area open.
    towers, walls = ring(0, 0, 2, 2)
    towers.remove((2, 2))
    s = score_castle(castle(towers, walls, [("red", (1.0, 1.0), False)]))
    assert s.courtyards == ()
    assert s.player("red").score == 0
    assert any(f.rule == "G1" and f.severity == "notice" and "[2, 2]" in f.message for f in s.findings)


def test_keep_outside_the_castle_is_supply_not_a_claim():
    towers, walls = ring(0, 0, 1, 1)
    keeps = [("red", (0.5, 0.5), False), ("blue", (5.5, 5.5), False)]
    s = score_castle(castle(towers, walls, keeps))
    assert s.player("blue").score == 0 and s.player("blue").keeps == 0
    assert "blue" in [p.colour for p in s.players]


def test_three_and_four_player_castles_list_every_player():
    towers, walls = merge(ring(0, 0, 1, 1), ring(1, 0, 2, 1))
    keeps = [("yellow", (0.5, 0.5), False), ("green", (1.5, 0.5), False)]
    s = score_castle(castle(towers, walls, keeps, players=["red", "blue", "yellow", "green"]))
    assert [p.colour for p in s.players] == ["red", "blue", "yellow", "green"]
    assert s.castle.sets_in_play == 2
    assert set(s.winners) == {"yellow", "green"}


def test_a_wall_end_against_a_long_walls_middle_is_closed_though_illegal():
    # G3/G4: the long wall passes over (0, 0); the left wall butts against it. The area is physically
    # closed (the blocked end is reported as G4), so it is a courtyard; (0, 0) holds no tower, so 3 count.
    towers = [(-1, 0), (1, 0), (1, 1), (0, 1)]
    walls = [((-1, 0), (1, 0)), ((0, 0), (0, 1)), ((0, 1), (1, 1)), ((1, 0), (1, 1))]
    s = score_castle(castle(towers, walls, [("red", (0.5, 0.5), False)]))
    assert [c.towers for c in s.courtyards] == [3]
    assert any(f.rule == "G4" for f in s.findings)
