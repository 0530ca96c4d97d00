"""The calibration benchmark's render cache keeps even-light and any-light renders apart."""
from __future__ import annotations

from calibration.benchmark import render_stem
from synth.calibration_scene import SCENE_VERSION


def test_cached_renders_are_named_by_light_and_scene_version():
    # One seed renders a different photo in even and in any light; keyed by the seed alone, an
    # even-light run of seed 600 reused the any-light renders cached under that seed.
    assert render_stem(600, even_light=True) != render_stem(600, even_light=False)
    assert render_stem(600, even_light=True) != render_stem(601, even_light=True)
    assert f"v{SCENE_VERSION}" in render_stem(600, even_light=True)
    # A further view of one scene is cached apart from its first.
    assert render_stem(600, even_light=True, view=1) != render_stem(600, even_light=True)
