"""The calibration benchmark: its render cache (even-light and any-light renders kept apart), its tallies, its timing."""
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


def test_heights_far_off_are_counted_apart_from_footprints():
    """A height far off was written to profiles without the summary's count of wrong sizes showing it
    (held-out even_3676: walls 6.9 mm too tall); such heights are counted apart from the footprints, and
    heights left unmeasured are not counted."""
    from calibration.benchmark import _size_summary

    rows = [{"tower": (0.1, 0.1, None), "short_wall": (-0.8, -0.2, 6.9), "keep": (-0.3, -0.3, 0.4)},
            {"tower": (-2.3, -2.3, 1.0), "short_wall": (0.2, 0.1, -2.5), "keep": (0.1, 0.1, None)}]
    line, wrong = _size_summary(rows, photos=2)
    assert "heights off by more than 2 mm written: 2 (short_wall +6.9, short_wall -2.5)" in line
    assert "sizes off by more than 2 mm passed: 2 (tower length -2.3, tower width -2.3)" in line
    assert wrong == ["tower length -2.3", "tower width -2.3"]


def test_speed_times_each_measurement_and_digests_a_refusal_too(tmp_path, capsys):
    # A photo with no mat in view is refused at once: the benchmark times it in both modes and records
    # what it gave; a photo without its truth file is not a render to time.
    import json

    import cv2
    import numpy as np

    from calibration.benchmark import main

    cv2.imwrite(str(tmp_path / "table.jpg"), np.full((480, 640, 3), 120, np.uint8))
    K = [[500.0, 0, 320.0], [0, 500.0, 240.0], [0, 0, 1]]
    (tmp_path / "table.json").write_text(json.dumps({"camera": {"K": K, "width": 640, "height": 480}}))
    cv2.imwrite(str(tmp_path / "loose.jpg"), np.full((48, 64, 3), 90, np.uint8))
    # Bad files beside them are skipped, each with its reason.
    (tmp_path / "broken.jpg").write_text("not a photo")
    (tmp_path / "broken.json").write_text(json.dumps({"camera": {"K": K, "width": 640, "height": 480}}))
    (tmp_path / "untrue.jpg").write_bytes((tmp_path / "table.jpg").read_bytes())
    (tmp_path / "untrue.json").write_text("{")
    out = tmp_path / "speed.json"
    assert main(["speed", str(tmp_path), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["photos"] == 1 and [r["photo"] for r in result["rows"]] == ["table"]
    row = result["rows"][0]
    assert row["camera"] == row["none"] and row["camera_cpu_s"] >= 0  # refused alike, with and without a camera
    printed = capsys.readouterr().out
    assert "2 measurements of 1 photos" in printed
    assert "skipped broken.jpg: not a readable image" in printed and "skipped untrue.jpg: its truth file" in printed
    assert main(["speed", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["speed", str(tmp_path / "empty")]) == 2
    assert "no renders with truth" in capsys.readouterr().err
