"""The judge's move check: what was added, and every breach with its rule id."""
from scoring import Castle, check_move

from .build import castle, merge, ring

SQUARE = ring(0, 0, 1, 1)


def rules(check):
    return {f.rule for f in check.findings if f.severity == "violation"}


def test_enclosing_and_claiming_a_courtyard_is_legal_and_lists_what_was_added():
    before = castle([(0, 0), (1, 0), (0, 1)], [((0, 0), (1, 0)), ((0, 0), (0, 1)), ((1, 0), (1, 1))])
    after = castle(*SQUARE, [("red", (0.5, 0.5), False)])
    check = check_move(before, after, "red")
    assert check.legal, check.findings
    assert check.added_towers == ((1, 1),)
    assert [str(w) for w in check.added_walls] == ["short wall [0, 1]-[1, 1]"]
    assert [k.colour for k in check.added_keeps] == ["red"]


def test_enclosed_courtyard_left_unclaimed_breaks_c2():
    before = castle([(0, 0), (1, 0), (0, 1)], [((0, 0), (1, 0)), ((0, 0), (0, 1)), ((1, 0), (1, 1))])
    check = check_move(before, castle(*SQUARE), "red")
    assert "C2" in rules(check) and not check.legal


def test_enclosed_courtyard_claimed_by_another_colour_breaks_rules():
    before = castle([(0, 0), (1, 0), (0, 1)], [((0, 0), (1, 0)), ((0, 0), (0, 1)), ((1, 0), (1, 1))])
    check = check_move(before, castle(*SQUARE, [("blue", (0.5, 0.5), False)]), "red")
    assert {"C2", "T1"} <= rules(check)


def test_removing_a_piece_is_reported():
    before = castle(*SQUARE, [("red", (0.5, 0.5), False)])
    after = castle(SQUARE[0][:-1] + [(2, 0)], SQUARE[1] + [((1, 0), (2, 0))], [("red", (0.5, 0.5), False)])
    assert "T1" in rules(check_move(before, after, "red"))


def test_first_turn_needs_a_tower_and_connected_pieces():
    empty = Castle()
    assert "T2" in rules(check_move(empty, castle([], [((0, 0), (1, 0))]), "red"))
    assert "T2" in rules(check_move(empty, castle([(0, 0), (5, 5)], [((0, 0), (1, 0))]), "red"))
    assert check_move(empty, castle([(0, 0)], [((0, 0), (1, 0))]), "red").legal


def test_pieces_not_connected_to_the_castle_break_g6():
    before = castle(*SQUARE, [("red", (0.5, 0.5), False)])
    after = castle(SQUARE[0] + [(4, 4)], SQUARE[1] + [((4, 4), (5, 4))], [("red", (0.5, 0.5), False)])
    assert "G6" in rules(check_move(before, after, "blue"))


def test_building_inside_another_players_courtyard_breaks_t3():
    big = ring(0, 0, 3, 3)
    before = castle(*big, [("red", (2.5, 2.5), False)])
    after = castle(big[0], big[1] + [((1, 0), (1, 1))], [("red", (2.5, 2.5), False)])
    check = check_move(before, after, "blue")
    assert "T3" in rules(check)
    # the owner may build there
    assert "T3" not in rules(check_move(before, after, "red"))


def test_dividing_your_courtyard_needs_a_keep_in_each_part():
    big = ring(0, 0, 2, 1)
    before = castle(*big, [("red", (0.5, 0.5), False)])
    after_pieces = merge(big, ([], [((1, 0), (1, 1))]))
    unclaimed = check_move(before, castle(*after_pieces, [("red", (0.5, 0.5), False)]), "red")
    assert "C3" in rules(unclaimed)
    claimed = check_move(before, castle(*after_pieces, [("red", (0.5, 0.5), False), ("red", (1.5, 0.5), False)]), "red")
    assert claimed.legal, claimed.findings


def test_double_keep_only_on_a_new_keep_and_only_once():
    before = castle([(0, 0), (1, 0), (0, 1)], [((0, 0), (1, 0)), ((0, 0), (0, 1)), ((1, 0), (1, 1))])
    assert check_move(before, castle(*SQUARE, [("red", (0.5, 0.5), True)]), "red").legal
    # upgrading an existing single keep later
    claimed = castle(*SQUARE, [("red", (0.5, 0.5), False)])
    grown = merge(SQUARE, ([(2, 0)], [((1, 0), (2, 0))]))
    upgraded = check_move(claimed, castle(*grown, [("red", (0.5, 0.5), True)]), "red")
    assert "C5" in rules(upgraded)
    # a second Double Keep in the same game
    two = merge(SQUARE, ring(1, 0, 2, 1))
    before2 = castle(SQUARE[0] + [(2, 0), (2, 1)], SQUARE[1] + [((1, 0), (2, 0)), ((2, 0), (2, 1))], [("red", (0.5, 0.5), True)])
    second = check_move(before2, castle(*two, [("red", (0.5, 0.5), True), ("red", (1.5, 0.5), True)]), "red")
    assert "C5" in rules(second)


def test_a_turn_that_builds_nothing_is_not_legal():
    c = castle(*SQUARE, [("red", (0.5, 0.5), False)])
    assert "T1" in rules(check_move(c, c, "blue"))


def test_blocking_a_wall_end_is_reported_for_the_turn_that_did_it():
    before = castle([(0, 0), (1, 1)], [((1, 1), (1, 0))])
    after = castle([(0, 0), (1, 1)], [((1, 1), (1, 0)), ((0, 0), (2, 0))])
    assert "G4" in rules(check_move(before, after, "red"))


def test_states_in_different_frames_are_aligned_before_comparing():
    # Two photos of one castle from different sides give it turned and shifted on the lattice.
    from scoring.generate import play_random_game
    from tests.scoring.test_properties import transformed

    turns = play_random_game(11, ["red", "blue"])
    before, after = turns[5].castle, turns[6].castle
    same_frame = check_move(before, after, turns[6].player)
    turned = transformed(before, lambda p: (-p[1] + 7, p[0] - 3))  # a quarter turn and a shift
    check = check_move(turned, after, turns[6].player)
    assert check.legal and same_frame.legal
    assert (check.added_towers, check.added_walls) == (same_frame.added_towers, same_frame.added_walls)
    assert check.alignment.quarter_turns == 3 and not check.alignment.mirrored
    assert same_frame.alignment.is_identity


def test_alignment_does_not_hide_a_removed_piece():
    before = castle(*SQUARE, [("red", (0.5, 0.5), False)])
    after = castle(SQUARE[0][:-1] + [(2, 0)], SQUARE[1] + [((1, 0), (2, 0))], [("red", (0.5, 0.5), False)])
    check = check_move(before, after, "red")
    assert check.alignment.is_identity and "T1" in rules(check)
