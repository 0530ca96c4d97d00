"""Benchmark: time the rules engine on generated finished 4-player castles.

    python -m benchmarks.scoring_benchmark [--castles 1000] [--json benchmarks/results/scoring.json]

Generating the castles is not timed; scoring each (courtyards, scores, every finding) is.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from scoring import score_castle
from scoring.generate import random_finished_castle

PLAYERS = ["red", "blue", "yellow", "green"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--castles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261122, help="first generator seed")
    parser.add_argument("--json", default="benchmarks/results/scoring.json", help="where to write the figures")
    args = parser.parse_args(argv)

    castles = [random_finished_castle(args.seed + i, PLAYERS) for i in range(args.castles)]
    pieces = [len(c.towers) + len(c.walls) for c in castles]
    # CPU time of this process as well as wall time: on a shared machine the wall clock also counts
    # whatever else is running.
    wall, cpu = [], []
    for c in castles:
        w0, c0 = time.perf_counter(), time.process_time()
        score_castle(c)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    times_ms = sorted(t * 1000 for t in wall)
    cpu_ms = sorted(t * 1000 for t in cpu)
    result = {
        "benchmark": "scoring",
        "castles": args.castles,
        "players": len(PLAYERS),
        "grey_pieces_mean": statistics.mean(pieces),
        "grey_pieces_min": min(pieces),
        "median_ms": statistics.median(times_ms),
        "p95_ms": times_ms[int(0.95 * (len(times_ms) - 1))],
        "max_ms": times_ms[-1],
        "cpu_median_ms": statistics.median(cpu_ms),
        "cpu_p95_ms": cpu_ms[int(0.95 * (len(cpu_ms) - 1))],
        "target_median_ms": 2.0,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    print(f"{'castles':<22}{result['castles']}")
    print(f"{'grey pieces (mean/min)':<22}{result['grey_pieces_mean']:.1f} / {result['grey_pieces_min']}")
    print(f"{'median ms per castle':<22}{result['median_ms']:.3f}   (target < 2 ms)")
    print(f"{'p95 ms per castle':<22}{result['p95_ms']:.3f}")
    print(f"{'max ms per castle':<22}{result['max_ms']:.3f}")
    print(f"{'CPU median / p95 ms':<22}{result['cpu_median_ms']:.3f} / {result['cpu_p95_ms']:.3f}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
