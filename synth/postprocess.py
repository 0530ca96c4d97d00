"""Turn the renderer's linear radiance into what a phone would save: exposure, white balance,
lens vignetting, blur, sensor noise, a tone curve with the phone's contrast and sharpening, JPEG.

Blur and noise strengths are defined for a 1600 px wide image and scale with the width, so a tiny
test render looks like a downscaled photo rather than a much blurrier one.
"""
from __future__ import annotations

import cv2
import numpy as np
from PIL import ExifTags, Image

from synth.conditions import Conditions

REFERENCE_WIDTH = 1600.0


def _luminance(img: np.ndarray) -> np.ndarray:
    return img[..., 0] * 0.2126 + img[..., 1] * 0.7152 + img[..., 2] * 0.0722


def develop(linear_rgb: np.ndarray, cond: Conditions, rng: np.random.Generator) -> np.ndarray:
    """Linear RGB float (H, W, 3) -> sRGB uint8 BGR (H, W, 3), before JPEG compression."""
    img = np.maximum(np.nan_to_num(linear_rgb.astype(np.float32)), 0.0)
    h, w = img.shape[:2]
    k = w / REFERENCE_WIDTH

    # Auto white balance: phones estimate the light's colour (not the table's: a green cloth stays
    # green) and correct most of it, not all (a warm lamp still looks warm), with a small error.
    illuminant = cond.illuminant_rgb()
    gains = (illuminant.mean() / illuminant) ** cond.white_balance * np.exp(rng.normal(0, 0.025, 3))
    img *= gains.astype(np.float32)[None, None, :]

    # Auto exposure on the log-average luminance of the centre, like a phone's centre-weighted meter.
    lum = _luminance(img)
    centre = lum[h // 6: h - h // 6, w // 6: w - w // 6]
    key = float(np.exp(np.mean(np.log(centre + 1e-4))))
    scale = 0.2 * 2.0 ** cond.exposure_bias / max(key, 1e-6)
    # Keep the brightest 1 % from clipping (phones protect highlights: light pieces on a dark cloth
    # stay grey, not white), by at most 1.5 stops.
    p99 = float(np.percentile(lum, 99.0)) * scale
    if p99 > 0.9:
        scale *= max(0.9 / p99, 2.0 ** -1.5)
    img *= scale

    # Lens vignetting (cos^4-like fall-off, partly corrected by the phone).
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w / 2) ** 2 + (yy - h / 2) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
    img *= (1.0 - cond.vignetting * r2)[..., None]

    # Optical blur (focus, lens) and hand-shake motion blur.
    if cond.blur_px * k > 0.05:
        img = cv2.GaussianBlur(img, (0, 0), cond.blur_px * k)
    if cond.motion_px * k >= 1.0:
        length = max(2, int(round(cond.motion_px * k)))
        kernel = np.zeros((length * 2 + 1, length * 2 + 1), np.float32)
        angle = rng.uniform(0, np.pi)
        c, s = np.cos(angle), np.sin(angle)
        for i in np.linspace(-length / 2, length / 2, length * 4):
            kernel[int(round(length + i * s)), int(round(length + i * c))] = 1.0
        img = cv2.filter2D(img, -1, kernel / kernel.sum())

    # Sensor noise: shot noise (grows with signal) plus read noise; the phone's denoiser leaves some
    # luminance grain and blurs the colour noise.
    sigma = cond.noise * np.sqrt(np.clip(img, 0, None) / 0.18 + 0.1)
    lum_noise = rng.standard_normal((h, w, 1)).astype(np.float32)
    chroma = rng.standard_normal((h, w, 3)).astype(np.float32)
    chroma = cv2.GaussianBlur(chroma, (0, 0), 1.2)
    img = img + sigma * (0.8 * lum_noise + 0.6 * chroma)

    # Tone curve: a soft shoulder for highlights, the phone's contrast, then sRGB encoding.
    img = np.clip(img, 0, None)
    img = img * (1 + img / 2.5) / (1 + img)
    srgb = np.where(img <= 0.0031308, 12.92 * img, 1.055 * np.power(np.clip(img, 1e-8, None), 1 / 2.4) - 0.055)
    srgb = np.clip(srgb, 0, 1)
    srgb = srgb + 0.12 * (srgb - 0.5) * (1 - np.abs(2 * srgb - 1))  # gentle S-curve
    # Sharpening, as every phone does.
    blurred = cv2.GaussianBlur(srgb, (0, 0), max(0.6, 1.2 * k))
    srgb = np.clip(srgb + 0.35 * (srgb - blurred), 0, 1)
    out = (srgb * 255 + rng.uniform(0, 1, srgb.shape)).astype(np.uint8)  # dithered quantisation
    return cv2.cvtColor(out, cv2.COLOR_RGB2BGR)


def encode_jpeg(bgr: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV always encodes uint8 BGR
        raise RuntimeError("JPEG encoding failed")
    return buf.tobytes()


def with_phone_exif(jpeg: bytes, focal_35mm: float) -> bytes:
    """The JPEG with the EXIF block a phone writes: maker, model and the 35 mm equivalent focal length.

    The APP1 segment is spliced in after the start-of-image marker, so the pixels are not re-encoded.
    """
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "Castellan"
    exif[ExifTags.Base.Model] = "synth phone"
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.FocalLengthIn35mmFilm] = int(round(focal_35mm))
    payload = exif.tobytes()
    if not payload.startswith(b"Exif\x00\x00"):
        payload = b"Exif\x00\x00" + payload
    segment = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    return jpeg[:2] + segment + jpeg[2:]
