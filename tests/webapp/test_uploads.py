"""The photo checks run before anything is read or stored."""
from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from webapp.engine import BadPhoto, PhotoTooLarge
from webapp.uploads import check_photo, sniff

from .conftest import jpeg_bytes, png_bytes


def heic_bytes() -> bytes:
    pillow_heif = pytest.importorskip("pillow_heif")
    pillow_heif.register_heif_opener()
    buf = io.BytesIO()
    Image.new("RGB", (128, 96), (90, 60, 30)).save(buf, "HEIF", quality=80)
    return buf.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims a huge size (a decompression bomb), with almost no data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_phone_formats_pass():
    assert check_photo(jpeg_bytes()) == "image/jpeg"
    assert check_photo(png_bytes()) == "image/png"
    assert check_photo(heic_bytes()) == "image/heic"


def test_truncated_heic_is_refused():
    data = heic_bytes()
    assert sniff(data) == "image/heic"
    with pytest.raises(BadPhoto, match="damaged or cut off"):
        check_photo(data[: len(data) // 2])


def test_decompression_bomb_is_refused():
    with pytest.raises(BadPhoto, match="far too many pixels"):
        check_photo(png_claiming(30000, 30000))


def test_size_limit_is_its_own_error():
    with pytest.raises(PhotoTooLarge, match="limit is 1 MB"):
        check_photo(jpeg_bytes() + b"\0" * (1024 * 1024), max_bytes=1024 * 1024)
    assert PhotoTooLarge.status == 413
