"""The web app reads every photo with the calibration profile it was configured with."""
import io
import json

import pytest

import vision
from calibration.profiles import FORMAT, ProfileError
from webapp import create_app

from .conftest import jpeg_bytes

PROFILE = {"format": FORMAT,
           "pieces": {"tower": {"footprint_mm": [22.0, 22.0]}, "short_wall": {"footprint_mm": [32.0, 9.0]},
                      "long_wall": {"footprint_mm": [86.0, 9.0]}, "keep": {"footprint_mm": [16.0, 16.0]}}}


def test_a_broken_profile_stops_the_app_at_start_naming_the_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": FORMAT, "camera": {"focal_px": -1}}))
    with pytest.raises(ProfileError, match="camera"):
        create_app({"DATABASE": str(tmp_path / "db.sqlite3"), "PROFILE": str(bad)})


def test_the_configured_profile_reaches_the_photo_reader(tmp_path, monkeypatch):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(PROFILE))
    app = create_app({"DATABASE": str(tmp_path / "db.sqlite3"), "PROFILE": str(path), "TESTING": True})
    seen = []
    real = vision.read_photo
    monkeypatch.setattr(vision, "read_photo", lambda data, **kw: seen.append(kw.get("profile")) or real(data, **kw))
    app.test_client().post("/api/score", data={"photo": (io.BytesIO(jpeg_bytes((640, 480))), "p.jpg")}, content_type="multipart/form-data")
    assert seen and seen[0] is not None
    assert seen[0].pieces.lattice_pitch_mm == pytest.approx(54.0)
