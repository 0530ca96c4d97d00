"""Write the per-pixel item labels (PHOTO_mask.png) of photos rendered without them.

    python -m synth.relabel DIR --prefix fresh --first-seed 70000

`castellan synth --no-masks` (or an older renderer) leaves photos without the label image the pixel
model is trained on (vision.train_pixels). The scene of photo i is rebuilt from its seed exactly as
`synth.batch.synthesize` built it and only the 1-sample label pass is rendered (about a second a
photo instead of half a minute). Each result is checked against the visible pixel counts stored in the
photo's truth; a photo whose scene does not come out the same is reported and left without labels.
One process per photo: Mitsuba numbers unnamed shapes per process, which would shift the labels.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np


def relabel_one(photo_json: Path, seed: int, index: int) -> bool:
    """Write the label image beside one photo; False when the rebuilt scene does not match its truth."""
    from scoring.generate import random_finished_castle
    from synth.batch import players_for
    from synth.render import _label_image, photo_scene

    truth = json.loads(photo_json.read_text())
    castle = random_finished_castle(seed, players_for(index))  # as synth.batch.synthesize drew it
    ps = photo_scene(castle, seed, truth["camera"]["width"], truth["camera"]["height"], spp=1)
    labels = _label_image(ps.mi, ps.scene, ps.layout)
    for p in truth["pieces"]:
        seen = int(np.count_nonzero(labels == p["mask_id"]))
        if abs(seen - p["visible_px"]) > 0.02 * p["visible_px"] + 5:
            return False
    cv2.imwrite(str(photo_json.with_name(photo_json.stem + "_mask.png")), labels.astype(np.uint16))
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--prefix", default="photo")
    ap.add_argument("--first-seed", type=int, required=True, help="the seed `castellan synth --seed` was given")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: relabel photo i in this process
    args = ap.parse_args(argv)
    if args.one is not None:
        path = args.folder / f"{args.prefix}_{args.one:03d}.json"
        return 0 if relabel_one(path, args.first_seed + args.one, args.one) else 1
    failed = []
    for path in sorted(args.folder.glob(f"{args.prefix}_[0-9][0-9][0-9].json")):
        i = int(path.stem.rsplit("_", 1)[1])
        if path.with_name(path.stem + "_mask.png").exists():
            continue
        rc = subprocess.call([sys.executable, "-m", "synth.relabel", str(args.folder), "--prefix", args.prefix,
                              "--first-seed", str(args.first_seed), "--one", str(i)])
        if rc != 0:
            failed.append(path.stem)
        print(f"{path.stem}: {'ok' if rc == 0 else 'scene differs from the truth; not labelled'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
