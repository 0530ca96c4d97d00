"""The Castellan rules engine: castle model, courtyards, scores and findings. Pure: no images, no I/O."""
from .castle import COLOURS, Castle, Keep, Point, Wall
from .courtyards import Courtyard, find_courtyards
from .findings import Finding
from .moves import MoveCheck, check_move
from .parse import CastleFormatError, parse_castle
from .score import Score, score_castle

__all__ = [
    "COLOURS", "Castle", "Keep", "Point", "Wall", "Courtyard", "find_courtyards", "Finding",
    "MoveCheck", "check_move", "CastleFormatError", "parse_castle", "Score", "score_castle",
]
