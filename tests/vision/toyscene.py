"""The castles and photos the vision tests share, drawn with synth.flat's shaded boxes."""
from __future__ import annotations

import functools

from synth.flat import encode_jpeg, look_at_camera, render  # noqa: F401  (the tests import them from here)

# A small closed castle: a 2x2 ring of long walls with towers at the corners, divided into two
# courtyards by a middle wall, one keep in each, one of them a Double Keep.
SMALL_CASTLE = {
    "format": "castellan/1",
    "towers": [[0, 0], [2, 0], [0, 2], [2, 2], [1, 0], [1, 2]],
    "walls": [
        {"from": [0, 0], "to": [1, 0]}, {"from": [1, 0], "to": [2, 0]},
        {"from": [0, 2], "to": [1, 2]}, {"from": [1, 2], "to": [2, 2]},
        {"from": [0, 0], "to": [0, 2]}, {"from": [2, 0], "to": [2, 2]},
        {"from": [1, 0], "to": [1, 2]},
    ],
    "keeps": [{"colour": "red", "at": [0.5, 1.0], "double": True}, {"colour": "blue", "at": [1.5, 1.0], "double": False}],
}


def toy_photo(castle: dict, elevation: float, azimuth: float, size: tuple[int, int] = (640, 480)) -> bytes:
    """A small JPEG of `castle` seen from `elevation` and `azimuth` (degrees), as the tests that read
    oblique photos take it: 520 units away, the same lighting seed."""
    return encode_jpeg(render(castle, elevation=elevation, azimuth=azimuth, size=size, distance=520, seed=2))


@functools.lru_cache(maxsize=1)
def top_down_jpeg() -> bytes:
    """SMALL_CASTLE from 80 degrees, nearly straight down (a Double Keep's extra height still shows):
    the photo the reader must read exactly; rendered once for all the tests that use it."""
    return encode_jpeg(render(SMALL_CASTLE, elevation=80, azimuth=30, size=(640, 480), distance=500, seed=1))
