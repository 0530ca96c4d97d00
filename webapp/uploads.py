"""Checks on an uploaded photo before anything is read or stored.

The photo reader also refuses unreadable files, but the app must answer a bad upload with a clear
4xx message even where the reader is not installed, and before spending seconds on it.
"""
from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

from .engine import BadPhoto, PhotoTooLarge

MB = 1024 * 1024
DEFAULT_MAX_PHOTO_BYTES = 50 * MB
# Photos of one castle read together (from different sides, or a second from lower down): a few are
# enough, and each costs seconds of reading. (Together they must fit in one request, MAX_CONTENT_LENGTH:
# two photos' limit, some 20 phone photos.)
MAX_PHOTOS = 4

# The container formats a phone produces (pieces-and-photos.md): JPEG, PNG, HEIC/HEIF.
_HEIF_BRANDS = {b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1", b"avif"}


def sniff(data: bytes) -> str | None:
    """The MIME type of a JPEG, PNG or HEIC photo from its first bytes, or None."""
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[4:8] == b"ftyp" and data[8:12] in _HEIF_BRANDS:
        return "image/heic"
    return None


def check_photo(data: bytes, *, max_bytes: int = DEFAULT_MAX_PHOTO_BYTES) -> str:
    """The photo's MIME type, or BadPhoto with a message saying what was wrong and what to do."""
    if not data:
        raise BadPhoto("The uploaded photo is empty (0 bytes). Choose the photo again or take a new one.")
    if len(data) > max_bytes:
        raise PhotoTooLarge(f"The photo is {len(data) / MB:.1f} MB; the limit is {max_bytes / MB:.0f} MB. "
                       "Send a smaller photo (most phones can share a reduced size).")
    kind = sniff(data)
    if kind is None:
        raise BadPhoto("This file is not a photo: send a JPEG, PNG or HEIC image from your camera.")
    if kind == "image/heic":
        try:
            import pillow_heif

            pillow_heif.register_heif_opener()
        except ImportError:  # pragma: no cover - pillow-heif is a dependency
            raise BadPhoto("HEIC photos cannot be read on this server: send a JPEG instead.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                if img.width < 1 or img.height < 1:
                    raise BadPhoto("The photo has no pixels. Take the photo again.")
                # Decoding at 1/8 scale still reads the whole stream (so a cut-off file is caught)
                # but costs a fraction of a full decode of a 48-megapixel photo.
                img.draft("RGB", (max(1, img.width // 8), max(1, img.height // 8)))
                img.load()
    except BadPhoto:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise BadPhoto("The photo has far too many pixels to be a phone photo (over 89 megapixels). "
                       "Send the photo as the camera took it.")
    except UnidentifiedImageError:
        raise BadPhoto("The photo file is damaged or cut off and cannot be read. "
                       "Upload it again, or take a new photo.")
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        reason = "cut off (incomplete)" if "truncated" in str(exc).lower() else "damaged"
        raise BadPhoto(f"The photo file is {reason} and cannot be read ({exc}). "
                       "Upload it again, or take a new photo.")
    return kind
