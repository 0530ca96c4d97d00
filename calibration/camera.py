"""Camera intrinsics: calibrated from photos of the mat, or a sensible default from EXIF.

- `calibrate_camera(images) -> CameraCalibration` (`.profile` a `CameraProfile`, `.per_view_error_px`,
  `.used`, `.skipped`): OpenCV's calibrateCamera on the ChArUco corners of several photos of the mat
  taken from different angles. Raises `CalibrationError` (a ValueError) saying what to do.
- `default_camera(width, height, focal_35mm=None) -> CameraProfile`: no distortion, principal point
  at the centre, focal length from the 35 mm-equivalent focal length (EXIF FocalLengthIn35mmFilm) or a
  typical phone main camera (26 mm equivalent).
- `camera_for_photo(width, height, profile=None, exif_focal_35mm=None) -> (CameraProfile, source)`:
  what the vision pipeline uses: the profile's camera scaled to the photo, else EXIF, else default.
- `exif_focal_35mm(image_bytes) -> float | None`.
- `focal_from_mat(image_points, mat_points_mm, width, height, homography) -> MatFocal`: the focal
  length one view of the mat gives, with its standard error from the scatter of the mat's points.
- `undistort_image(image, camera) -> ndarray`: the photo as a pinhole camera with the same matrix.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Sequence

import cv2
import numpy as np

from calibration.mat import detect_charuco, mat_layout
from calibration.profiles import CameraProfile, Profile, ProfileError
from vision.camera import inverse_square_focal

# A phone's main camera is close to 26 mm equivalent (a 35 mm frame's diagonal is 43.27 mm).
DEFAULT_FOCAL_35MM = 26.0
FULL_FRAME_DIAGONAL_MM = math.hypot(36.0, 24.0)

MIN_VIEWS = 3
MIN_CORNERS_PER_VIEW = 8


class CalibrationError(ValueError):
    """Calibration could not be done; the message says why and what to do."""


@dataclass
class CameraCalibration:
    profile: CameraProfile
    per_view_error_px: list[float]
    used: list[int]  # indices of the photos whose mat was used
    skipped: dict[int, str] = field(default_factory=dict)  # index -> why it was not used


def calibrate_camera(images: Sequence[np.ndarray], *, fix_k3: bool = True) -> CameraCalibration:
    """Calibrate from photos (BGR or grayscale ndarrays, all the same size) of the mat.

    Each photo should show the whole mat from a different direction and tilt (35 to 70 degrees
    up works well); flat-on photos alone cannot separate focal length from distance.
    """
    if len(images) == 0:
        raise CalibrationError("no photos given: take at least 3 photos of the mat from different angles")
    sizes = {(im.shape[1], im.shape[0]) for im in images}
    if len(sizes) > 1:
        raise CalibrationError(f"the photos have different sizes {sorted(sizes)}: use photos from one "
                               "camera in one mode and orientation")
    size = sizes.pop()
    obj_pts, img_pts, used, skipped = [], [], [], {}
    for i, im in enumerate(images):
        found = detect_charuco(im)  # it converts BGR/BGRA to grey itself
        if found is None:
            skipped[i] = "no mat found"
            continue
        paper, ids, pts, _ = found
        if len(ids) < MIN_CORNERS_PER_VIEW:
            skipped[i] = f"only {len(ids)} mat corners readable (need {MIN_CORNERS_PER_VIEW})"
            continue
        layout = mat_layout(paper)
        if layout.board().checkCharucoCornersCollinear(ids.reshape(-1, 1)):
            skipped[i] = "the readable mat corners lie on one line"
            continue
        obj = layout.corner_points_board_3d()[ids]
        obj_pts.append(obj.astype(np.float32))
        img_pts.append(pts.astype(np.float32).reshape(-1, 1, 2))
        used.append(i)
    if len(used) < MIN_VIEWS:
        why = "; ".join(f"photo {i + 1}: {r}" for i, r in skipped.items())
        raise CalibrationError(f"the mat was read in {len(used)} of {len(images)} photos, need at least "
                               f"{MIN_VIEWS} ({why}). Take photos with the whole mat in view, in focus, "
                               "from different angles")
    # Phone sensors have square pixels and negligible tangential distortion; fixing those makes
    # the focal length far steadier from a handful of photos (on synthetic views: from up to 3 %
    # off with 4 photos to under 1 %).
    flags = cv2.CALIB_FIX_ASPECT_RATIO | cv2.CALIB_ZERO_TANGENT_DIST
    if fix_k3:
        flags |= cv2.CALIB_FIX_K3
    w, h = size
    # Start from a typical phone focal length so few views still converge.
    f0 = _focal_px_from_35mm(DEFAULT_FOCAL_35MM, w, h)
    k0 = np.array([[f0, 0, (w - 1) / 2], [0, f0, (h - 1) / 2], [0, 0, 1]], np.float64)
    rms, K, dist, rvecs, tvecs, _, _, per_view = cv2.calibrateCameraExtended(
        obj_pts, img_pts, size, k0, np.zeros(5), flags=flags | cv2.CALIB_USE_INTRINSIC_GUESS,
        criteria=(cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-9))
    if not np.isfinite(rms) or K[0, 0] <= 0 or K[1, 1] <= 0:
        raise CalibrationError("calibration did not converge: take more photos from more varied angles")
    prof = CameraProfile(
        image_size=(int(w), int(h)),
        focal_px=(float(K[0, 0]), float(K[1, 1])),
        principal_point_px=(float(K[0, 2]), float(K[1, 2])),
        distortion=tuple(float(v) for v in np.ravel(dist)[:5]),
        reprojection_error_px=float(rms),
        views=len(used),
    )
    return CameraCalibration(prof, [float(v) for v in np.ravel(per_view)], used, skipped)


def _focal_px_from_35mm(focal_35mm: float, width: int, height: int) -> float:
    # The 35 mm-equivalent focal length is defined on the diagonal.
    return focal_35mm * math.hypot(width, height) / FULL_FRAME_DIAGONAL_MM


def default_camera(width: int, height: int, focal_35mm: float | None = None) -> CameraProfile:
    """A pinhole camera for a photo of this size: EXIF's 35 mm-equivalent focal, else a phone's."""
    f35 = focal_35mm if focal_35mm and 8.0 <= focal_35mm <= 600.0 else DEFAULT_FOCAL_35MM
    f = _focal_px_from_35mm(f35, width, height)
    return CameraProfile((int(width), int(height)), (f, f), ((width - 1) / 2, (height - 1) / 2))


def exif_focal_35mm(data: bytes) -> float | None:
    """EXIF FocalLengthIn35mmFilm of a JPEG/PNG/HEIC photo, or None."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            exif = im.getexif()
            value = exif.get_ifd(0x8769).get(0xA405) or exif.get(0xA405)
    except Exception:  # an unreadable photo simply has no EXIF focal length here
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if f > 0 else None


def camera_for_photo(width: int, height: int, profile: Profile | CameraProfile | None = None,
                     exif_focal_35mm: float | None = None) -> tuple[CameraProfile, str]:
    """The camera to use for a photo: (CameraProfile, source), source "profile", "exif" or "default".

    A profile made in another photo mode (another aspect ratio, e.g. 16:9 against a 4:3
    calibration) does not fit the photo; then EXIF or the default is used and the source reads
    "exif (profile is for another photo mode)" or "default (...)", so callers can say so.
    """
    cam = profile.camera if isinstance(profile, Profile) else profile
    mismatch = ""
    if cam is not None:
        try:
            return cam.for_image_size(width, height), "profile"
        except ProfileError:
            mismatch = " (profile is for another photo mode)"
    if exif_focal_35mm:
        return default_camera(width, height, exif_focal_35mm), "exif" + mismatch
    return default_camera(width, height), "default" + mismatch


def undistort_image(image: np.ndarray, camera: CameraProfile) -> np.ndarray:
    """Remove lens distortion, keeping the same camera matrix (so pixel scale is unchanged)."""
    h, w = image.shape[:2]
    cam = camera.for_image_size(w, h)
    if not np.any(cam.dist_coeffs()):
        return image
    return cv2.undistort(image, cam.matrix(), cam.dist_coeffs())


@dataclass(frozen=True)
class MatFocal:
    """A focal length (px) measured from one view of the mat, and its relative standard error."""
    focal_px: float | None  # None where the view shows no perspective to give one
    relative_error: float   # standard error / focal length (inf when it could not be estimated)


def focal_from_mat(image_points: np.ndarray, mat_points_mm: np.ndarray, width: int, height: int,
                   homography: np.ndarray) -> MatFocal:
    """The focal length (px) the mat's homography (mat mm -> image) gives, principal point at OpenCV's
    pixel centre, and how well the mat's points pin it.

    From nearly straight above the mat's outline changes little with the focal length, so points read a
    fraction of a pixel off can move it a long way (held-out render calib_v2_any_3828_v1, 84.6 degrees:
    4026 px for 1048, and a long wall measured 3.2 mm long with it). The standard error propagates the
    points' scatter about their least-squares homography (its RMS, the only noise measure one photo
    has) through the focal length's equation for 1/f^2, by finite differences of that fit.
    """
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    u_found = inverse_square_focal(homography, cx, cy)
    f = 1.0 / math.sqrt(u_found) if u_found > 0 else None
    img = np.asarray(image_points, np.float64).reshape(-1, 2)
    mat = np.asarray(mat_points_mm, np.float64).reshape(-1, 2)
    dof = 2 * len(img) - 8
    if dof <= 0:
        return MatFocal(f, math.inf)
    fitted, _ = cv2.findHomography(mat, img, 0)
    if fitted is None:
        return MatFocal(f, math.inf)
    residual = cv2.perspectiveTransform(mat.reshape(-1, 1, 2), fitted).reshape(-1, 2) - img
    noise_px = math.sqrt(float((residual ** 2).sum()) / dof)
    u = inverse_square_focal(fitted, cx, cy)
    step = 0.1  # px: small beside the points' scatter, large beside the fit's own tolerance
    gradient = []
    for i in range(len(img)):
        for axis in (0, 1):
            moved = img.copy()
            moved[i, axis] += step
            H, _ = cv2.findHomography(mat, moved, 0)
            gradient.append((inverse_square_focal(H, cx, cy) - u) / step if H is not None else math.inf)
    u_error = noise_px * math.sqrt(sum(g * g for g in gradient))
    # f = u^(-1/2), so df/f = -du / 2u.
    relative = u_error / (2.0 * u_found) if u_found > 0 and math.isfinite(u_error) else math.inf
    return MatFocal(f, relative)
