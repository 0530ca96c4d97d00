"""Render many photos of random finished castles, each with its ground truth, for tests and benchmarks.

Photo i uses seed `first_seed + i` for both the castle (scoring.generate) and the conditions, and the
number of players cycles 2, 3, 4 so a set covers every table size.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

from scoring.castle import COLOURS

PLAYER_CYCLE = (2, 3, 4)


def players_for(index: int) -> list[str]:
    n = PLAYER_CYCLE[index % len(PLAYER_CYCLE)]
    return list(COLOURS[:n])


def synthesize(count: int, out_dir: str | Path, *, first_seed: int = 0, width: int = 1600, height: int = 1200,
               spp: int = 16, prefix: str = "photo", masks: bool = True, progress: bool = True,
               overrides: dict[str, Any] | None = None,
               on_photo: Callable[[int, Path, dict[str, Any]], None] | None = None,
               min_elevation: float | None = None, view: int = 0, start: int = 0) -> list[Path]:
    """Render `count` photos into `out_dir` as PREFIX_NNN.jpg + .json (+ _mask.png); returns the paths.
    With `min_elevation`, only the photos whose camera is drawn at least that many degrees above the table
    are rendered; the others are skipped, so each photo keeps the seed and name it has in the whole set.
    With `view` K > 0, each scene is photographed again from another camera (synth.conditions.another_view),
    as PREFIX_NNN_vK.jpg: the same castles as view 0's photos, for reading several photos of one castle.
    With `start`, the set's photos before that index are left out (each photo keeps its seed and name), so
    that processes can share a set."""
    from scoring.generate import random_finished_castle

    from synth.conditions import another_view, draw_conditions
    from synth.render import render_jpeg, save_photo

    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    if not 0 <= start < count:
        raise ValueError(f"start must be from 0 to count - 1 ({count - 1}), got {start}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    index: list[dict[str, Any]] = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=count - start, unit="photo", file=sys.stderr, dynamic_ncols=True)
    try:
        for i in range(start, count):
            seed = first_seed + i
            scene_overrides = {**another_view(seed, view), **(overrides or {})}
            if min_elevation is not None and draw_conditions(seed, scene_overrides).elevation_deg < min_elevation:
                if bar is not None:
                    bar.update(1)
                continue
            castle = random_finished_castle(seed, players_for(i))
            jpeg, truth, labels = render_jpeg(castle, seed, width, height, spp, scene_overrides)
            truth["view"] = view
            name = f"{prefix}_{i:03d}" + (f"_v{view}" if view else "")
            path = save_photo(out / f"{name}.jpg", jpeg, truth, labels if masks else None)
            paths.append(path)
            c = truth["conditions"]
            index.append({"image": path.name, "truth": path.with_suffix(".json").name, "seed": seed, "view": view,
                          "players": len(truth["castle"].get("players") or players_for(i)),
                          "double_keeps": sum(1 for k in truth["castle"]["keeps"] if k.get("double")),
                          "elevation_deg": c["elevation_deg"], "light_kind": c["light_kind"],
                          "table": c["table"], "mat_present": c["mat_present"],
                          "render_s": truth["renderer"]["timings_s"]["total_s"]})
            if on_photo is not None:
                on_photo(i, path, truth)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"{path.name} {c['table']} {c['elevation_deg']:.0f}deg")
            (out / "index.json").write_text(json.dumps(index, indent=1))
    finally:
        if bar is not None:
            bar.close()
    return paths
