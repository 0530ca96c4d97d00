"""Profile JSON: round trip, merging, and errors that name the field."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from calibration.profiles import (FORMAT, CameraProfile, ProfileError, load_profile, load_profiles,
                                  parse_profile, save_profile)

GOOD = {
    "format": FORMAT,
    "camera": {"image_size": [4032, 3024], "focal_px": [3100.0, 3100.0], "principal_point_px": [2010.0, 1515.0],
               "distortion": [0.05, -0.1, 0.0, 0.0, 0.0], "reprojection_error_px": 0.4, "views": 6},
    "pieces": {"tower": {"footprint_mm": [22.0, 22.0], "height_mm": 42.0},
               "short_wall": {"footprint_mm": [9.0, 32.0], "height_mm": None},
               "long_wall": {"footprint_mm": [86.0, 9.0]},
               "keep": {"footprint_mm": [16.0, 16.0], "height_mm": 22.0}},
    "colours": {"keeps": {"red": {"lab": [45.0, 62.0, 45.0], "hue_deg": 36.0},
                          "blue": {"lab": [35.0, 10.0, -50.0]},
                          "yellow": {"lab": [85.0, 0.0, 80.0], "hue_deg": 90.0},
                          "green": {"lab": [50.0, -50.0, 30.0], "hue_deg": 149.0}}},
}


def test_round_trip_and_derived_values(tmp_path: Path):
    prof = parse_profile(GOOD)
    assert prof.pieces.short_wall.footprint_mm == (32.0, 9.0)  # length first, whatever the order given
    assert prof.pieces.lattice_pitch_mm == pytest.approx(54.0)
    assert prof.colours.keeps["blue"].hue_deg == pytest.approx(281.3, abs=0.1)  # from Lab when not given
    path = tmp_path / "p.json"
    save_profile(prof, path, merge=False)
    again = load_profile(path)
    assert again == prof
    assert json.loads(path.read_text())["format"] == FORMAT


def test_keep_colour_classification_uses_the_measured_hues():
    colours = parse_profile(GOOD).colours
    assert colours.classify((30.0, 55.0, 35.0))[0] == "red"  # a darker red, in shadow
    assert colours.classify((70.0, -40.0, 25.0))[0] == "green"
    assert colours.classify((90.0, 5.0, 70.0))[0] == "yellow"


def test_saving_a_section_keeps_the_others(tmp_path: Path):
    path = tmp_path / "p.json"
    save_profile(parse_profile(GOOD), path)
    new_cam = CameraProfile((1000, 750), (800.0, 800.0), (500.0, 375.0))
    written = save_profile(parse_profile({"format": FORMAT, "camera": new_cam.to_json()}), path)
    loaded = load_profile(path)
    assert loaded == written
    assert loaded.camera == new_cam and loaded.pieces == parse_profile(GOOD).pieces


def test_several_profiles_merge_later_sections_win(tmp_path: Path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(GOOD))
    b.write_text(json.dumps({"format": FORMAT, "camera": {"image_size": [100, 80], "focal_px": [90, 90],
                                                          "principal_point_px": [50, 40]}}))
    merged = load_profiles([a, b])
    assert merged.camera.image_size == (100, 80) and merged.pieces is not None
    assert load_profiles([]) is None


def _broken(path: tuple, value):
    doc = copy.deepcopy(GOOD)
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@pytest.mark.parametrize("path, value, message", [
    (("format",), KeyError, "format is missing"),
    (("format",), "castellan-profile/2", "cannot read"),
    (("format",), "castellan/1", "not a Castellan profile"),
    (("camera", "focal_px"), [-3, 3], "camera.focal_px must be positive"),
    (("camera", "focal_px"), [3000], "camera.focal_px must be a list of 2 numbers"),
    (("camera", "principal_point_px"), KeyError, "camera.principal_point_px is missing"),
    (("camera", "principal_point_px"), [9000, 10], "camera.principal_point_px must lie inside the image"),
    (("camera", "distortion"), [0.1, 0.2], "camera.distortion must be OpenCV's"),
    (("camera", "views"), 0, "camera.views must be a positive whole number"),
    (("pieces", "tower"), KeyError, "pieces.tower is missing"),
    (("pieces", "keep", "footprint_mm"), [16, "16"], "pieces.keep.footprint_mm must be a list of 2 numbers"),
    (("pieces", "long_wall", "footprint_mm"), [860, 9], "pieces.long_wall.footprint_mm must be between 1 and 300"),
    (("pieces", "tower", "colour"), "grey", "pieces.tower.colour is not a known field"),
    (("colours", "keeps", "purple"), {"lab": [50, 0, 0]}, "colours.keeps.purple is not a keep colour"),
    (("colours", "keeps", "red", "lab"), [150, 0, 0], "colours.keeps.red.lab must be CIELAB"),
    (("colours", "keeps"), {}, "colours.keeps must name at least one"),
    (("extra",), 1, "profile.extra is not a known field"),
])
def test_invalid_profiles_name_the_field(path, value, message):
    with pytest.raises(ProfileError, match=message.replace("(", r"\(")):
        parse_profile(_broken(path, value), source="my.json")
    with pytest.raises(ProfileError, match="^my.json: "):
        parse_profile(_broken(path, value), source="my.json")


def test_unreadable_files_are_clear_errors(tmp_path: Path):
    with pytest.raises(ProfileError, match="no such profile file"):
        load_profile(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": ')
    with pytest.raises(ProfileError, match=r"bad.json: is not valid JSON \(line 1"):
        load_profile(bad)
    bad.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ProfileError, match="not UTF-8"):
        load_profile(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ProfileError, match="must be a JSON object"):
        load_profile(bad)
    bad.write_text(json.dumps({"format": FORMAT}))
    with pytest.raises(ProfileError, match="none of the sections"):
        load_profile(bad)
    with pytest.raises(ProfileError, match="is a directory"):
        load_profile(tmp_path)


def test_camera_profile_follows_the_photo_size_and_orientation():
    cam = CameraProfile((4000, 3000), (3000.0, 3000.0), (2010.0, 1490.0), (0.1, -0.2, 0.001, 0.002, 0.0))
    half = cam.for_image_size(2000, 1500)
    assert half.focal_px == (1500.0, 1500.0)
    assert half.principal_point_px[0] == pytest.approx(1004.75)
    portrait = cam.for_image_size(3000, 4000)
    assert portrait.image_size == (3000, 4000)
    assert portrait.focal_px == (3000.0, 3000.0)
    assert portrait.distortion[:2] == (0.1, -0.2)
    with pytest.raises(ProfileError, match="another aspect ratio"):
        cam.for_image_size(4000, 2250)


def test_profile_from_a_configuration_setting(tmp_path: Path):
    from calibration.profiles import profile_from_setting

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(GOOD))
    b.write_text(json.dumps({"format": FORMAT, "camera": {"image_size": [100, 80], "focal_px": [90, 90],
                                                          "principal_point_px": [50, 40]}}))
    assert profile_from_setting(None) is None and profile_from_setting("  ") is None
    assert profile_from_setting(str(a)).pieces is not None
    both = profile_from_setting(f"{a}:{b}")
    assert both.camera.image_size == (100, 80) and both.colours is not None
    assert profile_from_setting(GOOD).camera.views == 6
    with pytest.raises(ProfileError, match="no such profile file"):
        profile_from_setting(str(tmp_path / "gone.json"))
