"""Choose and load Mitsuba 3, the renderer behind synth (an optional extra: `pip install .[synth]`).

The vectorised `llvm_ad_rgb` variant is about 2.5x faster than `scalar_rgb` but needs a libLLVM of
version 16 or newer; Debian's default libLLVM (14) is too old and Mesa's libLLVM-15 aborts the
process inside Dr.Jit, so we point Dr.Jit at a recent one explicitly before it looks on its own.
Without one we fall back to `scalar_rgb`, which needs no system library.
"""
from __future__ import annotations

import glob
import os
import re
from functools import lru_cache
from types import ModuleType

# Where Debian/Ubuntu (and a few other distributions) put libLLVM.
_LLVM_GLOBS = (
    "/usr/lib/x86_64-linux-gnu/libLLVM*.so*",
    "/usr/lib/aarch64-linux-gnu/libLLVM*.so*",
    "/usr/lib/llvm-*/lib/libLLVM*.so*",
    "/usr/lib64/libLLVM*.so*",
    "/usr/lib/libLLVM*.so*",
    "/usr/local/lib/libLLVM*.so*",
)
MIN_LLVM_MAJOR = 16


class RendererUnavailable(RuntimeError):
    """Mitsuba is not installed: the renderer is the optional extra `pip install .[synth]`."""


def find_libllvm() -> str | None:
    """Path of the newest libLLVM (major >= 16) in the usual places, or None."""
    best: tuple[int, str] | None = None
    for pattern in _LLVM_GLOBS:
        for path in glob.glob(pattern):
            match = re.search(r"LLVM-?(\d+)", os.path.basename(path)) or re.search(r"llvm-(\d+)", path)
            if match is None:
                continue
            major = int(match.group(1))
            if major >= MIN_LLVM_MAJOR and (best is None or major > best[0]):
                best = (major, path)
    return best[1] if best else None


@lru_cache(maxsize=1)
def load_mitsuba(prefer: str | None = None) -> tuple[ModuleType, str]:
    """Import Mitsuba, set its variant and return (module, variant name).

    `prefer` (or the environment variable CASTELLAN_SYNTH_VARIANT) forces "llvm_ad_rgb" or
    "scalar_rgb"; by default the LLVM variant is used when a recent libLLVM is found.
    """
    try:
        import mitsuba as mi
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RendererUnavailable(
            "the renderer needs Mitsuba 3: install the optional extra with `pip install .[synth]`"
        ) from exc
    wanted = prefer or os.environ.get("CASTELLAN_SYNTH_VARIANT")
    if wanted not in (None, "", "llvm_ad_rgb", "scalar_rgb"):
        raise ValueError(f"unknown Mitsuba variant {wanted!r}: use llvm_ad_rgb or scalar_rgb")
    if wanted != "scalar_rgb":
        llvm = os.environ.get("DRJIT_LIBLLVM_PATH") or find_libllvm()
        if llvm:
            os.environ["DRJIT_LIBLLVM_PATH"] = llvm
            try:
                mi.set_variant("llvm_ad_rgb")
                import drjit as dr

                # Touch the JIT now so a broken libLLVM fails here, not in the middle of a render.
                dr.eval(mi.Float([1.0, 2.0]) * 2)
                return mi, "llvm_ad_rgb"
            except Exception:  # noqa: BLE001 - any failure means: use the portable variant
                if wanted == "llvm_ad_rgb":
                    raise
        elif wanted == "llvm_ad_rgb":
            raise RendererUnavailable(
                f"llvm_ad_rgb needs libLLVM >= {MIN_LLVM_MAJOR} (Debian: apt-get install libllvm19)"
            )
    mi.set_variant("scalar_rgb")
    return mi, "scalar_rgb"


def denoiser() -> ModuleType | None:
    """The CPU denoiser (Intel Open Image Denoise bindings), or None when not installed."""
    try:
        import mitsuba_oidn
    except ImportError:
        return None
    return mitsuba_oidn
