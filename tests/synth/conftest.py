import pytest

pytest.importorskip("mitsuba", reason="the renderer is the optional extra: pip install .[synth]")

# A small castle: four 1x1 courtyards around a centre tower, one keep of each colour, one Double Keep.
SMALL_CASTLE = {
    "format": "castellan/1",
    "towers": [[x, y] for x in range(3) for y in range(3)],
    "walls": (
        [{"from": [x, y], "to": [x + 1, y]} for x in range(2) for y in range(3)]
        + [{"from": [x, y], "to": [x, y + 1]} for x in range(3) for y in range(2)]
    ),
    "keeps": [
        {"colour": "red", "at": [0.5, 0.5], "double": True},
        {"colour": "blue", "at": [1.5, 0.5]},
        {"colour": "yellow", "at": [0.5, 1.5]},
        {"colour": "green", "at": [1.5, 1.5]},
    ],
    "players": ["red", "blue", "yellow", "green"],
}

# A plain scene: no clutter, no mat, little noise or blur, one soft light.
PLAIN = {
    "spare_keeps": 0, "cards": 0, "game_box": False, "mat": False, "noise": 0.002, "blur_px": 0.0,
    "motion_px": 0.0, "light_kinds": ["ceiling"], "roll_deg": 0.0, "jpeg_quality": 92,
}


@pytest.fixture(scope="session")
def small_castle():
    return dict(SMALL_CASTLE)


@pytest.fixture(scope="session")
def plain():
    return dict(PLAIN)
