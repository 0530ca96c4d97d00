"""The calibration renders' pieces are sets a real box could hold (no rendering: fast)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mitsuba", reason="the renderer is the optional extra: pip install .[synth]")

from synth.calibration_scene import calibration_layout  # noqa: E402


@pytest.mark.parametrize("seed", range(6))
def test_rendered_sets_obey_g3_but_vary(seed):
    # calibration.pieces refuses sets that break G3 (long = 2 x short + tower), so the benchmark's
    # sets must obey it; their sizes and the tower's share of the pitch still vary.
    items = {it.kind: it.box_size for it in calibration_layout(np.random.default_rng(seed)).items}
    tower, short, long_ = items["tower"], items["short_wall"], items["long_wall"]
    assert long_[0] == pytest.approx(2 * short[0] + tower[0], abs=1e-6)
    assert short[1] == pytest.approx(long_[1]) and short[2] == pytest.approx(long_[2])
    assert 0.8 * 54 < tower[0] + short[0] < 1.2 * 54


def test_rendered_sets_differ_in_size_and_proportion():
    sets = [{it.kind: it.box_size for it in calibration_layout(np.random.default_rng(s)).items} for s in range(8)]
    pitches = [st["tower"][0] + st["short_wall"][0] for st in sets]
    shares = [st["tower"][0] / (st["tower"][0] + st["short_wall"][0]) for st in sets]
    assert np.ptp(pitches) > 5.0 and np.ptp(shares) > 0.02


def test_a_further_view_photographs_the_same_set_from_elsewhere():
    # `calibrate pieces` combines photos of one set from several sides; the benchmark renders them so.
    from synth.calibration_scene import render_calibration_jpeg

    _, first = render_calibration_jpeg(seed=5, width=160, height=120, spp=1)
    _, again = render_calibration_jpeg(seed=5, width=160, height=120, spp=1, view=1)
    assert again["pieces"] == first["pieces"] and again["table"] == first["table"]
    assert again["conditions"]["lights"] == first["conditions"]["lights"]
    assert again["camera"]["centre_mm"] != first["camera"]["centre_mm"]
    assert 55 <= again["conditions"]["elevation_deg"] <= 85
