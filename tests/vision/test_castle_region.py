"""Which grey pixels are the castle: a lattice of thin walls and towers, not the biggest grey thing."""
import numpy as np

from vision.region import castle_region


def _lattice(mask: np.ndarray, x0: int, y0: int, cells: int, pitch: int = 30, wall: int = 4, tower: int = 9) -> None:
    """Draw a castle's mask seen from above: walls a few pixels thick on a lattice, towers at its points."""
    span = cells * pitch
    for k in range(cells + 1):
        mask[y0 + k * pitch:y0 + k * pitch + wall, x0:x0 + span + wall] = True
        mask[y0:y0 + span + wall, x0 + k * pitch:x0 + k * pitch + wall] = True
        for j in range(cells + 1):
            ty, tx = y0 + k * pitch - tower // 2 + wall // 2, x0 + j * pitch - tower // 2 + wall // 2
            mask[ty:ty + tower, tx:tx + tower] = True


def test_the_castle_is_found_beside_a_bigger_solid_grey_box():
    grey = np.zeros((300, 400), bool)
    _lattice(grey, 220, 70, cells=5)
    castle = grey.copy()
    grey[20:200, 10:140] = True  # the game box's lid: more grey pixels than the whole castle
    assert grey[20:200, 10:140].sum() > castle.sum()
    region = castle_region(grey)
    assert region[castle].all()
    assert not region[20:200, 10:140].any()
