"""scripts/setup.sh compiles the reader's kernels ahead (python -m vision.warm_up), so a fresh install's first
photo does not wait for numba."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL_MODULES = ("icm_kernel", "silhouette_kernel", "comb_kernel")


def test_warm_up_leaves_every_kernel_of_the_reader_compiled_in_the_cache(tmp_path: Path):
    # An empty cache, as on a fresh install: the warm-up must compile every kernel a reading runs.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "vision.warm_up"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "photo reader ready" in done.stdout
    compiled = {p.name.split(".")[0] for p in tmp_path.rglob("*.nbc")}
    assert set(KERNEL_MODULES) <= compiled, f"no compiled code cached for {set(KERNEL_MODULES) - compiled}"
