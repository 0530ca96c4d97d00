"""Compile the photo reader's numba kernels before the first photo (scripts/setup.sh runs this).

    python -m vision.warm_up

numba compiles the reader's inner loops (vision/icm_kernel.py, vision/silhouette_kernel.py,
vision/comb_kernel.py) the first time they run and caches them on disk, so on a fresh install the first
photo a user uploads would wait some ten seconds for it (`python -m benchmarks.first_run`). Reading one of
the sample photos runs every kernel with the argument types a reading uses; later processes find the cache.
"""
from __future__ import annotations

import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "sample_photos" / "photo_000.jpg"


def warm_up(photo: Path = SAMPLE) -> float:
    """Read `photo` once, compiling (or loading from the cache) every kernel; returns the seconds it took."""
    from vision.pipeline import read_photo

    start = time.perf_counter()
    read_photo(photo.read_bytes())
    return time.perf_counter() - start


def main() -> None:
    if not SAMPLE.exists():
        print(f"vision.warm_up: {SAMPLE} is missing, so the first photo read will compile the reader's kernels")
        return
    print(f"photo reader ready: its compiled kernels are cached ({warm_up():.1f} s)")


if __name__ == "__main__":
    main()
