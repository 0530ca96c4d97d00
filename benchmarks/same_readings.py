"""Check that a change leaves every reading as it was (for speed work), and what each photo cost.

    python -m benchmarks.same_readings record OUT.json PHOTOS... [--jobs 2]
    python -m benchmarks.same_readings compare BEFORE.json AFTER.json

`record` reads each photo (no ground truth needed) and writes what the reader answered: the castle (or its
refused best guess), confidence, refusal and confidence factors, with the CPU seconds and stage timings.
`compare` lists the photos whose reading differs and prints both runs' median CPU seconds and stage
medians. Timings of runs made one after the other differ by some 15 % on a shared machine whatever the
code; to measure a speed change, run the two versions at the same time, one core each
(benchmarks.vision_benchmark --jobs 1 from two checkouts), and compare photo by photo.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any


def read_one(path: str) -> tuple[str, dict[str, Any]]:
    import cv2

    cv2.setNumThreads(1)
    from vision import PhotoError, read_photo

    data = Path(path).read_bytes()
    start = time.process_time()
    try:
        reading = read_photo(data)
    except PhotoError as e:
        return path, {"error": str(e)}
    cpu = time.process_time() - start
    castle = reading.castle or reading.tentative_castle
    return path, {"castle": castle.to_json() if castle is not None else None, "confidence": reading.confidence,
                  "refusal": reading.refusal, "factors": reading.rectification.get("factors"), "cpu": cpu,
                  "timings": reading.timings}


def differences(before: dict[str, dict], after: dict[str, dict], tolerance: float = 1e-9) -> list[str]:
    """The photos read in both runs whose castle, refusal or confidence differ."""
    out = []
    for photo in sorted(before.keys() & after.keys()):
        a, b = before[photo], after[photo]
        if (a.get("castle") != b.get("castle") or a.get("refusal") != b.get("refusal") or a.get("error") != b.get("error")
                or abs((a.get("confidence") or 0.0) - (b.get("confidence") or 0.0)) > tolerance):
            out.append(photo)
    return out


def _medians(run: dict[str, dict]) -> tuple[float, dict[str, float]]:
    rows = [r for r in run.values() if "cpu" in r]
    if not rows:
        return float("nan"), {}
    stages = sorted({k for r in rows for k in r["timings"]})
    return statistics.median(r["cpu"] for r in rows), {k: round(statistics.median(r["timings"].get(k, 0.0) for r in rows), 3)
                                                      for k in stages}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_readings", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="read photos and write what the reader answered")
    rec.add_argument("out")
    rec.add_argument("photos", nargs="+")
    rec.add_argument("--jobs", type=int, default=2)
    cmp_ = sub.add_parser("compare", help="which readings differ between two records")
    cmp_.add_argument("before")
    cmp_.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "record":
        missing = [p for p in args.photos if not Path(p).is_file()]
        if missing:
            print(f"no such photo: {missing[0]}", file=sys.stderr)
            return 2
        with ProcessPoolExecutor(max(1, args.jobs)) as pool:
            run = dict(pool.map(read_one, args.photos))
        Path(args.out).write_text(json.dumps(run, indent=0, default=float))
        cpu, stages = _medians(run)
        print(f"{len(run)} photos; median {cpu:.3f} CPU-s; stage medians {stages}")
        return 0
    before, after = (json.loads(Path(p).read_text()) for p in (args.before, args.after))
    changed = differences(before, after)
    for photo in changed:
        print(f"differs: {photo} (confidence {before[photo].get('confidence')} -> {after[photo].get('confidence')})")
    print(f"{len(before.keys() & after.keys()) - len(changed)} of {len(before.keys() & after.keys())} readings the same")
    for name, run in (("before", before), ("after", after)):
        cpu, stages = _medians(run)
        print(f"{name}: median {cpu:.3f} CPU-s; stage medians {stages}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
