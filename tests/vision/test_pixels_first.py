"""Which pixel models read a photo first: the network alone where the perceptron vetoed the castle's plastic."""
import numpy as np

from tests.vision.toyscene import top_down_jpeg
from vision.decode import decode_photo
from vision.pipeline import WORKING_SIDE, PhotoCues, pixels_to_read_first
from vision.pixels import NETWORK_FOR_GREY, SHIPPED_MODEL, SHIPPED_NET, SHIPPED_READINGS


def _cues_whose_models_saw(network_grey: np.ndarray, perceptron_grey: np.ndarray) -> PhotoCues:
    """A photo's cues whose two shipped pixel models already gave these grey probabilities."""
    cues = PhotoCues(decode_photo(top_down_jpeg(), max_side=WORKING_SIDE))
    for path, grey in ((SHIPPED_NET, network_grey), (SHIPPED_MODEL, perceptron_grey)):
        probs = np.zeros(grey.shape + (3,), np.float32)
        probs[:, :, 1] = grey
        probs[:, :, 0] = 1.0 - grey
        cues.layers.each_model[path] = probs
    return cues


def _walls(shape: tuple[int, int], width: int) -> np.ndarray:
    """A lattice of walls `width` pixels thick, each seen along its top edge."""
    grey = np.zeros(shape, np.float32)
    for k in range(40, 200, 40):
        grey[k:k + width, 40:206] = 0.95
        grey[40:206, k:k + width] = 0.95
    return grey


def test_where_the_models_agree_the_shipped_mean_reads_first():
    shape = PhotoCues(decode_photo(top_down_jpeg(), max_side=WORKING_SIDE)).layers.features.shape[:2]
    walls = _walls(shape, 6)
    assert pixels_to_read_first(_cues_whose_models_saw(walls, walls), SHIPPED_READINGS[0]) == SHIPPED_READINGS[0]


def test_where_the_perceptron_vetoed_much_of_the_plastic_the_network_alone_reads_first():
    shape = PhotoCues(decode_photo(top_down_jpeg(), max_side=WORKING_SIDE)).layers.features.shape[:2]
    walls = _walls(shape, 6)
    half = _walls(shape, 3)  # the perceptron sees one side of each wall (unseen41 photo_052)
    assert pixels_to_read_first(_cues_whose_models_saw(walls, half), SHIPPED_READINGS[0]) == NETWORK_FOR_GREY
    # Models a caller asked for are kept whatever they see.
    assert pixels_to_read_first(_cues_whose_models_saw(walls, half), SHIPPED_READINGS[1]) == SHIPPED_READINGS[1]
