"""How long the first photo and the first piece calibration wait on a fresh install.

    python -m benchmarks.first_run [--json out.json]

The reader's and the piece measurement's inner loops are compiled by numba the first time they run, and the
compiled code is cached on disk for every later process. Each job runs in a new process with an empty numba
cache, twice (the first run compiles, the second shows the job's own cost), then once more in a new process
that finds the cache the first one wrote (what every later start of the CLI or the web app pays). Printed: CPU
seconds of each, and the compile time (first run minus second).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vision.warm_up import SAMPLE

ROOT = Path(__file__).resolve().parent.parent
JOBS = {
    "read a photo": ("vision", SAMPLE),  # the photo scripts/setup.sh warms the reader up with
    "measure pieces": ("pieces", ROOT / "tests" / "calibration" / "data" / "calib_v2_any_3684.jpg"),
}


def job_cpu_seconds(kind: str, path: Path, runs: int) -> list[float]:
    """CPU seconds of each of `runs` runs of one job in this process ("vision": read the photo at `path`;
    "pieces": measure the pieces on the calibration render at `path` with its true camera)."""
    if kind == "vision":
        from vision.pipeline import read_photo

        data = path.read_bytes()
        job = lambda: read_photo(data)  # noqa: E731
    else:
        import cv2

        from calibration.benchmark import camera_profile_from_truth
        from calibration.pieces import measure_pieces

        image = cv2.imread(str(path))
        camera = camera_profile_from_truth(json.loads(path.with_suffix(".json").read_text()))
        job = lambda: measure_pieces(image, camera=camera)  # noqa: E731
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        job()
        times.append(time.process_time() - t0)
    return times


def _run(kind: str, path: Path, runs: int, cache_dir: str) -> list[float]:
    """job_cpu_seconds in a new process whose numba cache is `cache_dir`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "benchmarks.first_run", "--child", kind, str(path), str(runs)],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(job: str) -> dict[str, Any]:
    """One job's CPU seconds: first and second run with an empty cache, and a run in a new process after."""
    kind, path = JOBS[job]
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
        first, second = _run(kind, path, 2, cache_dir)
        (cached,) = _run(kind, path, 1, cache_dir)
    return {"job": job, "photo": str(path.relative_to(ROOT)), "first_cpu_s": round(first, 2),
            "second_cpu_s": round(second, 2), "compile_cpu_s": round(first - second, 2),
            "new_process_cached_cpu_s": round(cached, 2)}


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'job':<16} {'first run':>10} {'second':>8} {'compile':>8} {'next process':>13}   (CPU s)"]
    for r in rows:
        lines.append(f"{r['job']:<16} {r['first_cpu_s']:>10.1f} {r['second_cpu_s']:>8.1f} {r['compile_cpu_s']:>8.1f} "
                     f"{r['new_process_cached_cpu_s']:>13.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.first_run", description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "RUNS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:  # one measuring process of _run: its times as JSON on the last line
        kind, path, runs = args.child
        print(json.dumps(job_cpu_seconds(kind, Path(path), int(runs))))
        return 0
    rows = [measure(job) for job in JOBS]
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
