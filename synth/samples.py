"""The committed sample set (sample_photos/): a planned spread of castles, cameras, tables and lights.

Random draws alone could leave gaps in 24 photos, so the plan pins what the set must cover
(2-, 3- and 4-player castles, elevations 30-90 degrees evenly, every table kind, every light kind,
the mat in some, Double Keeps in several, a few portrait shots) and leaves the rest to the seed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from synth.textures import TABLE_KINDS

LIGHT_PLAN = (
    ["sun"], ["window"], ["lamp"], ["ceiling"], ["window", "lamp"], ["ceiling", "lamp"],
    ["sun", "ceiling"], ["window", "ceiling", "lamp"], ["lamp", "flash"], ["window", "sun"],
)


def sample_plan(count: int = 24, first_seed: int = 500) -> list[dict[str, Any]]:
    """One entry per photo: seed, players, portrait or not, and the pinned conditions."""
    from scoring.generate import random_finished_castle

    from synth.batch import players_for

    elevations = np.linspace(30, 90, count)
    np.random.default_rng(7).shuffle(elevations)
    plan = []
    seed = first_seed
    for i in range(count):
        players = players_for(i)
        # The first photos of each size are chosen to hold a Double Keep, so the set has several.
        while True:
            castle = random_finished_castle(seed, players)
            if i >= 6 or any(k.double for k in castle.keeps):
                break
            seed += 1
        plan.append({
            "seed": seed,
            "players": players,
            "portrait": i % 6 == 5,
            "overrides": {
                "elevation_deg": float(round(elevations[i], 1)),
                "table_kind": TABLE_KINDS[i % len(TABLE_KINDS)],
                "light_kinds": LIGHT_PLAN[i % len(LIGHT_PLAN)],
                "mat": i % 4 == 1,
            },
        })
        seed += 1
    return plan


def make_samples(out_dir: str | Path, count: int = 24, width: int = 1600, height: int = 1200, spp: int = 16,
                 progress: bool = True) -> list[Path]:
    """Render the planned set into out_dir (photo_NNN.jpg/.json/_mask.png, index.json, contact_sheet.jpg)."""
    from scoring.generate import random_finished_castle

    from synth.contact_sheet import contact_sheet
    from synth.render import render_jpeg, save_photo

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = sample_plan(count)
    bar = None
    if progress:
        import sys

        from tqdm import tqdm

        bar = tqdm(total=len(plan), unit="photo", file=sys.stderr)
    paths, index = [], []
    for i, entry in enumerate(plan):
        castle = random_finished_castle(entry["seed"], entry["players"])
        w, h = (height, width) if entry["portrait"] else (width, height)
        jpeg, truth, labels = render_jpeg(castle, entry["seed"], w, h, spp, entry["overrides"])
        path = save_photo(out / f"photo_{i:03d}.jpg", jpeg, truth, labels)
        paths.append(path)
        c = truth["conditions"]
        index.append({"image": path.name, "truth": path.with_suffix(".json").name, "seed": entry["seed"],
                      "players": len(entry["players"]),
                      "double_keeps": sum(1 for k in truth["castle"]["keeps"] if k.get("double")),
                      "size": [w, h], "elevation_deg": c["elevation_deg"], "light_kind": c["light_kind"],
                      "lights": [l["kind"] for l in c["lights"]], "light_temps_k": c["light_temps_k"],
                      "table": c["table"], "mat_present": c["mat_present"], "jpeg_quality": c["jpeg_quality"],
                      "render_s": truth["renderer"]["timings_s"]["total_s"]})
        (out / "index.json").write_text(json.dumps(index, indent=1))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    contact_sheet(paths, out / "contact_sheet.jpg", captions=[
        f"{e['image'][6:9]} {e['players']}p {e['elevation_deg']:.0f}deg {e['table']} {'+'.join(e['lights'])}"
        + (" mat" if e["mat_present"] else "") + (" DK" if e["double_keeps"] else "") for e in index])
    return paths
