"""Bringing two castles into one lattice frame.

castellan/1 leaves origin and orientation free, and two photos of one castle, taken before and after a
turn from different sides, give the same pieces in different frames. To compare them, the earlier
castle is moved by the lattice symmetry (a quarter-turn rotation, possibly mirrored) and translation
under which most of its towers land on towers of the later one. Pieces are only ever added, so the
right alignment keeps almost everything in place.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from .castle import Castle, Keep, Point, Wall


@dataclass(frozen=True)
class Alignment:
    """x' = R(x) + offset, where R turns by `quarter_turns` x 90 degrees after an optional mirror in x."""

    quarter_turns: int = 0
    mirrored: bool = False
    offset: tuple[int, int] = (0, 0)

    @property
    def is_identity(self) -> bool:
        return self.quarter_turns == 0 and not self.mirrored and self.offset == (0, 0)

    def map(self, p: tuple[float, float]) -> tuple[float, float]:
        x, y = p
        if self.mirrored:
            x = -x
        for _ in range(self.quarter_turns):
            x, y = -y, x
        return (x + self.offset[0], y + self.offset[1])

    def apply(self, castle: Castle) -> Castle:
        pt: Callable[[Point], Point] = lambda p: tuple(int(v) for v in self.map(p))  # noqa: E731
        return Castle(
            towers=tuple(pt(t) for t in castle.towers),
            walls=tuple(Wall.between(pt(w.a), pt(w.b)) for w in castle.walls),
            keeps=tuple(Keep(k.colour, self.map(k.at), k.double) for k in castle.keeps),
            players=castle.players, sets=castle.sets, extra=castle.extra,
        )

    def to_json(self) -> dict[str, Any]:
        return {"rotation_deg": 90 * self.quarter_turns, "mirrored": self.mirrored, "offset": list(self.offset)}


# Identity first, mirrors last: among equally good alignments the plainest wins.
SYMMETRIES = [(q, m) for m in (False, True) for q in range(4)]


def _anchors(castle: Castle) -> list[Point]:
    return sorted(set(castle.towers)) or sorted({p for w in castle.walls for p in w.ends})


def _keeps_matched(moved: Castle, after: Castle, near: float = 0.5) -> int:
    """How many of `moved`'s keeps stand within `near` of a keep of `after` of the same colour and height
    (read from photos, keeps stand anywhere in their courtyard, not on the lattice)."""
    return sum(any(k.colour == a.colour and k.double == a.double and
                   max(abs(k.at[0] - a.at[0]), abs(k.at[1] - a.at[1])) <= near for a in after.keeps)
               for k in moved.keeps)


def align(before: Castle, after: Castle) -> Alignment:
    """The alignment that carries `before` onto `after` with the most of its anchor points matched.

    Towers vote for the offset under each symmetry; ties go to the identity, then to the alignment
    that also matches the most walls, then the most keeps (a symmetric ring of walls is told apart by
    the keeps inside it)."""
    src, dst = _anchors(before), _anchors(after)
    if not src or not dst:
        return Alignment()
    dst_set = set(dst)
    if all(p in dst_set for p in src) and _keeps_matched(before, after) == len(before.keeps):
        return Alignment()  # already in one frame (the usual case for typed castles)
    after_walls = set(after.walls)
    best, best_key = Alignment(), (-1, -1, -1)
    for turns, mirrored in SYMMETRIES:
        turned = Alignment(turns, mirrored)
        moved = [tuple(int(v) for v in turned.map(p)) for p in src]
        votes = Counter((a[0] - m[0], a[1] - m[1]) for m in moved for a in dst)
        top = max(votes.values())
        for offset, n in votes.items():
            if n != top:
                continue
            candidate = Alignment(turns, mirrored, offset)
            walls = sum(1 for w in candidate.apply(Castle(walls=before.walls)).walls if w in after_walls)
            key = (n, walls, _keeps_matched(candidate.apply(Castle(keeps=before.keeps)), after))
            if key > best_key:
                best, best_key = candidate, key
    return best
