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


def test_each_keep_is_recorded_with_its_own_error():
    """The profile keeps the keeps' median; the benchmark records each keep, so how far apart they
    measured (what the keep check refuses on) is known on photos where it did not fire."""
    from calibration.benchmark import _keep_errors
    from calibration.pieces import PieceFit

    fits = [PieceFit("keep", (0, 0), 0, 16.5, 16.5, 22.0, 1, 40, colour="red"),
            PieceFit("keep", (0, 0), 0, 14.0, 14.0, 23.0, 1, 40, colour="blue"),
            PieceFit("tower", (0, 0), 0, 22.0, 22.0, 42.0, 1, 0)]
    errors = _keep_errors(fits, [16.0, 16.0, 22.0])
    assert errors == {"red": [0.5, 0.5, 0.0], "blue": [-2.0, -2.0, 1.0]}
