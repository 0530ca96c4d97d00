"""Properties over whole games played by the random generator."""
import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import Castle, Keep, Wall, check_move, parse_castle, score_castle
from scoring.generate import play_random_game, random_finished_castle

GAMES = dict(max_examples=25, deadline=None)
seeds = st.integers(min_value=0, max_value=10**6)
player_lists = st.sampled_from([["red", "blue"], ["yellow", "green"], ["red", "blue", "yellow"],
                                ["red", "blue", "yellow", "green"]])


def transformed(c: Castle, f) -> Castle:
    """The same castle with every point mapped by f (an isometry of the lattice)."""
    return Castle(
        towers=tuple(f(t) for t in c.towers),
        walls=tuple(Wall.between(f(w.a), f(w.b)) for w in c.walls),
        keeps=tuple(Keep(k.colour, f(k.at), k.double) for k in c.keeps),
        players=c.players, sets=c.sets,
    )


def summary(c: Castle):
    s = score_castle(c)
    return (
        {p.colour: (p.score, p.keeps, p.courtyards) for p in s.players},
        set(s.winners),
        sorted((y.owner or "", y.towers, y.points, len(y.courtyard.cells)) for y in s.courtyards),
        sorted((f.rule, f.severity) for f in s.findings),
    )


@settings(**GAMES)
@given(seeds, player_lists, st.integers(-20, 20), st.integers(-20, 20))
def test_scores_do_not_change_under_translation(seed, players, dx, dy):
    c = random_finished_castle(seed, players)
    assert summary(transformed(c, lambda p: (p[0] + dx, p[1] + dy))) == summary(c)


@settings(**GAMES)
@given(seeds, player_lists, st.integers(1, 3), st.booleans())
def test_scores_do_not_change_under_rotation_and_mirroring(seed, players, quarter_turns, mirror):
    def f(p):
        x, y = p
        for _ in range(quarter_turns):
            x, y = -y, x
        return (-x, y) if mirror else (x, y)

    c = random_finished_castle(seed, players)
    assert summary(transformed(c, f)) == summary(c)


@settings(**GAMES)
@given(seeds, player_lists, st.randoms(use_true_random=False))
def test_scores_do_not_change_when_the_json_is_reordered(seed, players, rnd):
    doc = random_finished_castle(seed, players).to_json()
    for key in ("towers", "walls", "keeps"):
        rnd.shuffle(doc[key])
    for w in doc["walls"]:
        if rnd.random() < 0.5:
            w["from"], w["to"] = w["to"], w["from"]
    shuffled = dict(rnd.sample(list(doc.items()), len(doc)))
    reread = parse_castle(json.dumps(shuffled))
    assert summary(reread) == summary(random_finished_castle(seed, players))


@settings(**GAMES)
@given(seeds, player_lists, st.randoms(use_true_random=False))
def test_removing_a_claimed_courtyards_keep_turns_its_points_into_c7(seed, players, rnd):
    c = random_finished_castle(seed, players)
    s = score_castle(c)
    claimed = [y for y in s.courtyards if y.owner]
    assert claimed, "a finished game has claimed courtyards"
    yard = rnd.choice(claimed)
    without = Castle(c.towers, c.walls, tuple(k for k in c.keeps if k not in yard.keeps), c.players, c.sets)
    s2 = score_castle(without)
    assert s2.player(yard.owner).score == s.player(yard.owner).score - yard.points
    c7 = [f for f in s2.findings if f.rule == "C7"]
    assert len(c7) == 1 and {tuple(p) for p in c7[0].at} == set(yard.courtyard.cells)


@settings(**GAMES)
@given(seeds, player_lists)
def test_a_generated_finished_game_has_no_violations(seed, players):
    s = score_castle(random_finished_castle(seed, players))
    assert [f.message for f in s.findings if f.severity == "violation"] == []
    assert len(s.courtyards) > 0


@settings(max_examples=8, deadline=None)
@given(seeds, player_lists)
def test_every_turn_of_a_generated_game_is_a_legal_move(seed, players):
    turns = play_random_game(seed, players)
    before = Castle(players=tuple(players))
    for turn in turns:
        check = check_move(before, turn.castle, turn.player)
        assert check.legal, [f.message for f in check.findings]
        before = turn.castle


def test_generated_games_cover_two_to_four_players_and_double_keeps():
    doubles = 0
    for seed in range(12):
        players = [["red", "blue"], ["red", "blue", "yellow"], ["red", "blue", "yellow", "green"]][seed % 3]
        c = random_finished_castle(seed, players)
        assert {k.colour for k in c.keeps} <= set(players)
        doubles += sum(k.double for k in c.keeps)
        per_colour = [sum(k.double for k in c.keeps if k.colour == p) for p in players]
        assert max(per_colour) <= 1
    assert doubles >= 3


def test_generator_is_reproducible_from_its_seed():
    assert random_finished_castle(42, ["red", "blue"]) == random_finished_castle(42, ["red", "blue"])
    assert random_finished_castle(random.Random(5), ["red", "blue"]) == random_finished_castle(5, ["red", "blue"])
