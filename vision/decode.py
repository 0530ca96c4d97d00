"""Stage 1: turn the bytes a user uploaded into an upright, downscaled BGR image, or refuse clearly.

Only this module reads user bytes, so every "this is not a photo" message comes from here.
"""
from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from vision.errors import PhotoError

try:  # HEIC is what iPhones write; without pillow-heif those photos would be "not an image".
    import pillow_heif

    pillow_heif.register_heif_opener()
    HEIF_SUPPORTED = True
except ImportError:  # pragma: no cover - pillow-heif is a declared dependency
    HEIF_SUPPORTED = False

# The spec allows phone photos up to 48 megapixels; anything far beyond that is either not a phone
# photo or a decompression bomb (a tiny file that claims a huge canvas).
MAX_PIXELS = 120_000_000
MAX_BYTES = 80 * 1024 * 1024
MIN_SIDE = 64
ACCEPTED_FORMATS = {"JPEG", "PNG", "HEIF", "MPO", "WEBP"}

# Length of the diagonal of a 35 mm film frame: "35 mm equivalent" focal lengths refer to it.
FILM_DIAGONAL_MM = math.hypot(36.0, 24.0)

_EXIF_FOCAL_LENGTH = 0x920A
_EXIF_FOCAL_35MM = 0xA405
_EXIF_FPLANE_XRES = 0xA20E
_EXIF_FPLANE_UNIT = 0xA210


@dataclass(frozen=True)
class DecodedPhoto:
    """An upright photo at working resolution, plus what its header says about the lens."""

    bgr: np.ndarray  # uint8, H x W x 3, EXIF orientation applied, downscaled to the working size
    original_size: tuple[int, int]  # (width, height) of the upright full-resolution photo
    format: str
    focal_px: float | None  # focal length in pixels of `bgr`, when the EXIF data allows it
    focal_source: str  # "exif-35mm", "exif-focal-plane" or "none"

    @property
    def scale(self) -> float:
        """Working pixels per original pixel."""
        return self.bgr.shape[1] / self.original_size[0]


def _rational(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def _focal_px(exif: Image.Exif, width: int, height: int, stored_size: tuple[int, int]) -> tuple[float | None, str]:
    """Focal length in pixels for an upright image of width x height, from EXIF when it is there.

    FocalLengthIn35mmFilm is what phones write reliably; FocalLength (mm) alone needs the sensor
    size, which we only know when FocalPlaneXResolution is given too.
    """
    try:
        ifd = exif.get_ifd(ExifTags.IFD.Exif)
    except Exception:  # broken EXIF blocks must not stop us from reading the pixels
        return None, "none"
    diag = math.hypot(width, height)
    f35 = _rational(ifd.get(_EXIF_FOCAL_35MM))
    if f35 is not None and 8 <= f35 <= 400:
        return f35 / FILM_DIAGONAL_MM * diag, "exif-35mm"
    f_mm = _rational(ifd.get(_EXIF_FOCAL_LENGTH))
    xres = _rational(ifd.get(_EXIF_FPLANE_XRES))
    unit = ifd.get(_EXIF_FPLANE_UNIT, 2)
    if f_mm is not None and xres is not None:
        per_mm = {2: 1 / 25.4, 3: 0.1, 4: 1.0}.get(int(unit) if str(unit).isdigit() else 2, 1 / 25.4)
        px_per_mm_sensor = xres * per_mm  # pixels of the stored image per mm of sensor
        f_stored_px = f_mm * px_per_mm_sensor
        f = f_stored_px * (max(width, height) / max(stored_size))
        if f > 0.2 * diag and f < 10 * diag:
            return f, "exif-focal-plane"
    return None, "none"


def decode_photo(data: bytes, *, max_side: int = 1280) -> DecodedPhoto:
    """Decode JPEG/PNG/HEIC bytes, apply EXIF orientation and downscale so the long side <= max_side.

    Raises PhotoError with a message a user can act on for anything that is not a readable photo.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise PhotoError("expected the photo's bytes")
    data = bytes(data)
    if not data:
        raise PhotoError("the file is empty: upload the photo file itself (JPEG, PNG or HEIC)")
    if len(data) > MAX_BYTES:
        raise PhotoError(f"the file is {len(data) / 1e6:.0f} MB, more than a phone photo: send at most {MAX_BYTES // 2**20} MB")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            fmt = (img.format or "").upper()
            if fmt not in ACCEPTED_FORMATS:
                raise PhotoError(f"this is a {fmt or 'unknown'} image; send a JPEG, PNG or HEIC photo")
            w, h = img.size
            # Check the claimed size before decoding a single pixel: that is what stops a bomb.
            if w * h > MAX_PIXELS:
                raise PhotoError(
                    f"the image claims {w}x{h} pixels ({w * h / 1e6:.0f} MP), far more than any phone photo; "
                    "refusing to decode it (send the camera's original photo, at most 48 MP)"
                )
            if min(w, h) < MIN_SIDE:
                raise PhotoError(f"the image is only {w}x{h} pixels: send the camera's full-size photo")
            exif = img.getexif()
            if fmt == "JPEG":
                # DCT-domain downscaling: a 12 MP JPEG decodes at 1/2..1/8 size several times faster.
                img.draft("RGB", (max_side, max_side))
            img.load()
    except PhotoError:
        raise
    except Image.DecompressionBombError as exc:
        raise PhotoError("the image is a decompression bomb (it claims far more pixels than a photo): refusing it") from exc
    except Image.DecompressionBombWarning as exc:
        raise PhotoError("the image claims far more pixels than a phone photo: refusing to decode it") from exc
    except UnidentifiedImageError as exc:
        raise PhotoError("this file is not an image: send a JPEG, PNG or HEIC photo of the castle") from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        # Pillow reports truncated or corrupt data as OSError("image file is truncated ...") and friends.
        raise PhotoError(f"the image file is damaged or cut short ({exc}); send the photo again") from exc

    stored_size = (w, h)
    orientation = exif.get(0x0112, 1)
    img = ImageOps.exif_transpose(img)
    upright_full = (h, w) if orientation in (5, 6, 7, 8) else (w, h)
    if img.mode not in ("RGB",):
        img = img.convert("RGBA").convert("RGB") if "A" in img.getbands() or img.mode == "P" else img.convert("RGB")
    scale = min(1.0, max_side / max(img.size))
    if scale < 1.0:
        new_size = (max(1, round(img.size[0] * scale)), max(1, round(img.size[1] * scale)))
        img = img.resize(new_size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    rgb = np.asarray(img, dtype=np.uint8)
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    focal, source = _focal_px(exif, bgr.shape[1], bgr.shape[0], stored_size)
    return DecodedPhoto(bgr=bgr, original_size=upright_full, format=fmt, focal_px=focal, focal_source=source)
