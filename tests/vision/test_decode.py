"""Decoding user uploads: what is a photo, what is refused, and with which message."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image

from vision import PhotoError
from vision.decode import decode_photo


def _jpeg(img: Image.Image, **save) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=95, **save)
    return buf.getvalue()


def _two_tone(w: int = 80, h: int = 64) -> Image.Image:
    """Left half red, right half blue: any rotation shows where the left went."""
    arr = np.zeros((h, w, 3), np.uint8)
    arr[:, : w // 2] = (220, 30, 30)
    arr[:, w // 2 :] = (30, 30, 220)
    return Image.fromarray(arr)


def test_plain_jpeg_decodes_to_bgr():
    photo = decode_photo(_jpeg(_two_tone()))
    assert photo.bgr.shape == (64, 80, 3)
    assert photo.format == "JPEG"
    # BGR order: the left half is red, so its last channel is the large one.
    assert photo.bgr[32, 5, 2] > 150 and photo.bgr[32, 5, 0] < 80


def test_exif_orientation_is_applied():
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: the viewer turns it 90 degrees clockwise
    photo = decode_photo(_jpeg(_two_tone(), exif=exif.tobytes()))
    assert photo.bgr.shape == (80, 64, 3)
    assert photo.original_size == (64, 80)
    # Turned clockwise, the red left half is now at the top.
    assert photo.bgr[5, 32, 2] > 150 and photo.bgr[75, 32, 0] > 150


def test_exif_35mm_focal_length_gives_focal_in_pixels():
    exif = Image.Exif()
    exif.get_ifd(0x8769)[0xA405] = 26
    photo = decode_photo(_jpeg(_two_tone(), exif=exif.tobytes()))
    assert photo.focal_source == "exif-35mm"
    # 35 mm equivalent: relative to the 36 x 24 mm frame's diagonal.
    assert photo.focal_px == pytest.approx(26 / math.hypot(36.0, 24.0) * math.hypot(80, 64), rel=1e-6)


def test_no_exif_means_no_focal():
    assert decode_photo(_jpeg(_two_tone())).focal_px is None


def test_large_photo_is_downscaled_early():
    photo = decode_photo(_jpeg(_two_tone(3000, 2000)), max_side=1000)
    assert max(photo.bgr.shape[:2]) <= 1000
    assert photo.original_size == (3000, 2000)


def test_png_with_alpha_decodes():
    buf = io.BytesIO()
    Image.new("RGBA", (100, 90), (10, 200, 10, 128)).save(buf, "PNG")
    assert decode_photo(buf.getvalue()).bgr.shape == (90, 100, 3)


def test_heic_decodes():
    pytest.importorskip("pillow_heif")
    buf = io.BytesIO()
    try:
        _two_tone().save(buf, "HEIF", quality=90)
    except Exception as exc:  # the wheel may lack an HEVC encoder; decoding is what we test
        pytest.skip(f"no HEIF encoder here: {exc}")
    photo = decode_photo(buf.getvalue())
    assert photo.format == "HEIF" and photo.bgr.shape[:2] == (64, 80)


@pytest.mark.parametrize("data, words", [
    (b"", "empty"),
    (b"this is a text file, not a photo\n" * 10, "not an image"),
    (b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n", "not an image"),
])
def test_non_images_are_refused_with_a_clear_message(data, words):
    with pytest.raises(PhotoError) as err:
        decode_photo(data)
    assert words in str(err.value)


def test_truncated_jpeg_is_refused():
    data = _jpeg(_two_tone(400, 300))
    with pytest.raises(PhotoError) as err:
        decode_photo(data[: len(data) // 2])
    assert "damaged or cut short" in str(err.value)


def test_decompression_bomb_is_refused_before_decoding():
    buf = io.BytesIO()
    Image.new("1", (12000, 12000)).save(buf, "PNG")  # a few kB that claim 144 megapixels
    assert len(buf.getvalue()) < 200_000
    with pytest.raises(PhotoError) as err:
        decode_photo(buf.getvalue())
    assert "phone photo" in str(err.value) and "refus" in str(err.value)


def test_gif_is_refused_by_format():
    buf = io.BytesIO()
    _two_tone().save(buf, "GIF")
    with pytest.raises(PhotoError) as err:
        decode_photo(buf.getvalue())
    assert "JPEG, PNG or HEIC" in str(err.value)


def test_tiny_image_is_refused():
    with pytest.raises(PhotoError) as err:
        decode_photo(_jpeg(_two_tone(40, 30)))
    assert "40x30" in str(err.value)
