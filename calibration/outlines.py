"""What a piece measurement stands on: the mat's homography and the camera's pose above it, the photo
rectified onto the mat and compared with the print as printed, and the box whose central projection
explains a piece's outline there (footprint, turn and height, a wall with its end tabs); the fits' and
the measurement's types. calibration.pieces tells the whole measurement."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import cv2
import numpy as np
from scipy import optimize
from shapely.geometry import MultiPoint, Polygon

from calibration.appearance_kernel import box_corners
from calibration.camera import MatFocal, default_camera
from calibration.cover_kernel import boundary_distance
from calibration.mat import MIN_POINTS, MatDetection, fit_homography
from calibration.profiles import ColourProfile, PieceProfile

if TYPE_CHECKING:  # (calibration.appearance builds on this module)
    from calibration.appearance import _Evidence


RECT_PX_PER_MM = 4.0
# Without a camera profile the mat's focal length is used while its perspective shows at three standard
# errors (1/f^2 at least three of its standard errors above zero, i.e. f within +/-1/6 at one), else
# EXIF's.
MAT_FOCAL_MAX_RELATIVE_ERROR = 1.0 / 6.0
# A height is measured only where the focal length's error alone (one standard error, as a share of the
# height) keeps it within this (mm): a piece's height scales with the camera's height above the mat,
# which scales with the focal length.
FOCAL_HEIGHT_MAX_MM = 1.0
# Spec estimates (pieces-and-photos.md): length, width, height in mm. Used only to start fits and
# to name pieces, never as the answer.
NOMINAL_MM = {"tower": (22.0, 22.0, 42.0), "short_wall": (32.0, 9.0, 30.0),
              "long_wall": (86.0, 9.0, 30.0), "keep": (16.0, 16.0, 22.0)}
# Typical CIELAB hue angles of the four keep colours, only to name measured keeps.
NOMINAL_HUE_DEG = {"red": 35.0, "yellow": 90.0, "green": 150.0, "blue": 280.0}
MIN_PIECE_AREA_MM2 = 80.0
# A coloured region whose appearance fit settles on a box under half a keep's side (16 mm in the spec,
# sets within +/-15 %) is no keep: under a warm lamp and a cold sun a piece's shadow on the white paper
# is tinted blue enough to pass for a keep's colour, and the fit finds no box in it (held-out render
# calib_v2_any_3666: a patch in the tower's shadow fitted 1.3 mm across, beside four keeps of 16).
MIN_KEEP_SIDE_MM = 8.0
# Solid area of sure piece pixels (not explained by a shadow) that makes a region a piece: grey
# plastic standing on the squares covers black ink over an area, while a shadow leaves only the
# pixel-wide lines of the squares' edges and noise specks, which an opening removes (on the dev
# renders: shadows 0-1 mm2, grey pieces 87 mm2 and more). A 5 x 5 mm patch.
SURE_PIECE_MM2 = 25.0
# A pixel differs from the print when it is this far (as a share of the local black-to-white
# range) from what the print should look like there.
DIFF_THRESHOLD = 0.2
# Colourful pieces (keeps) versus grey plastic: CIELAB chroma after white balance on the paper.
KEEP_MIN_CHROMA = 18.0
# A keep's colour shift (about 0.4 of the paper white in one channel) counts as fully different.
COLOUR_WEIGHT = 2.0


class PieceMeasureError(ValueError):
    """The photo cannot be measured; the message says what to change. Once the mat was found,
    `debug_image` shows the rectified mat with the pieces outlined as they were when refused."""

    debug_image: np.ndarray | None = None


@dataclass
class PieceFit:
    kind: str
    centre_mm: tuple[float, float]
    angle_deg: float
    length_mm: float
    width_mm: float
    height_mm: float
    iou: float
    chroma: float
    lab: tuple[float, float, float] | None = None
    colour: str | None = None
    outline_mm: np.ndarray | None = None
    raw_outline_mm: np.ndarray | None = None  # before filling its dents (a wall's tabs make real ones)
    evidence: "_Evidence | None" = None  # set when a shadow made the outline unusable
    outline_start: np.ndarray | None = None  # the box fitted to the outline alone
    label: int = 0  # its region in the rectified photo's labels
    deep_shadow: float = 0.0  # share of the white paper around it darker than half the paper's white
    # Why nothing in the photo held its height (a key of _UNSEEN_HEIGHT, _hold_unseen_heights); None: it was measured.
    unseen_height: str | None = None
    found_from_part: bool = False  # a tower found again from the set after only a part of its top stood out

    @property
    def height_measured(self) -> bool:
        return self.unseen_height is None

    @property
    def box(self) -> np.ndarray:
        """(cx, cy, theta, length, width, height): the box fitted so far, as the fits take it."""
        return np.array([self.centre_mm[0], self.centre_mm[1], math.radians(self.angle_deg), self.length_mm,
                         self.width_mm, self.height_mm])

    @box.setter
    def box(self, q: np.ndarray) -> None:
        self.centre_mm = (float(q[0]), float(q[1]))
        self.angle_deg = math.degrees(q[2]) % 180
        self.length_mm, self.width_mm, self.height_mm = float(q[3]), float(q[4]), float(q[5])


@dataclass
class PieceMeasurement:
    pieces: PieceProfile
    colours: ColourProfile
    fits: list[PieceFit]
    camera_centre_mm: tuple[float, float, float]
    focal_source: str
    debug_image: np.ndarray
    notes: list[str] = field(default_factory=list)


# A point of the mat read further than this from where the others put it is mis-read, mm. find_mat
# keeps points within 2 mm (it serves the castle reader too, for which that is close enough); here the
# print is compared with the photo to a fraction of a millimetre, and a few marker corners read 1.5 to
# 2.3 mm off (on the development renders) tilted the fit: the print 20 mm beyond the board (the 100 mm
# check bar) then sat a millimetre off the template and passed for a fourth grey piece. A corner read
# to a pixel is within 0.7 mm at the 1.5 pixels per mm the measurement needs.
MAT_POINT_TOLERANCE_MM = 1.0


def _tighter_homography(det: MatDetection) -> MatDetection:
    """The mat's homography fitted again without the points more than MAT_POINT_TOLERANCE_MM off
    (RANSAC, then a plain fit to the rest); `det` as it was if too few are left."""
    img, mat = det.all_image_points.astype(np.float64), det.all_mat_points_mm.astype(np.float64)
    if len(img) < MIN_POINTS:
        return det
    fitted = fit_homography(img, mat, MAT_POINT_TOLERANCE_MM)
    if fitted is None:
        return det
    H, keep, rms = fitted
    if keep.all() or keep.sum() < len(keep) // 2:
        return det
    return replace(det, homography=H, homography_inv=np.linalg.inv(H), all_image_points=det.all_image_points[keep],
                   all_mat_points_mm=det.all_mat_points_mm[keep], rms_mm=rms)


def _camera_pose(det, K: np.ndarray) -> np.ndarray:
    """Camera centre in mat mm (x, y, z), z negative above the mat."""
    obj = np.column_stack([det.all_mat_points_mm, np.zeros(len(det.all_mat_points_mm))]).astype(np.float64)
    ok, rvec, tvec = cv2.solvePnP(obj, det.all_image_points.astype(np.float64), K, None, flags=cv2.SOLVEPNP_IPPE)
    if not ok:
        raise PieceMeasureError("could not work out where the camera was from the mat; retake the photo "
                                "with the whole mat flat and in view")
    R, _ = cv2.Rodrigues(rvec)
    centre = (-R.T @ tvec).ravel()
    if centre[2] >= 0:  # the mat is seen from below: the board was read mirrored
        raise PieceMeasureError("the mat looks mirrored; use the photo as the camera took it")
    return centre


def _camera_without_profile(mat_focal: MatFocal, exif_focal_35mm: float | None, width: int, height: int,
                            notes: list[str]) -> tuple[np.ndarray, str, float]:
    """The camera matrix, where its focal length came from and its relative standard error (0 for EXIF's,
    which the photo cannot check), with no camera profile: the mat's focal length while its perspective
    shows, else EXIF's."""
    f, error = mat_focal.focal_px, mat_focal.relative_error
    if f is not None and error <= MAT_FOCAL_MAX_RELATIVE_ERROR:
        if _focal_too_loose(error, NOMINAL_MM["tower"][2]):  # some height will be held for it (_misled_height)
            notes.append(f"no camera profile, and the mat, seen nearly straight-on, gives the focal length within "
                         f"+/-{100 * error:.1f} % only")
        return _with_focal(default_camera(width, height).matrix(), f), "mat", error
    if exif_focal_35mm:
        how_well = "" if f is None else f" (the mat gives it within +/-{100 * error:.0f} % only)"
        notes.append(f"no camera profile and the view is too straight-on to measure the focal length{how_well}; "
                     "heights rest on the photo's EXIF focal length (calibrate the camera for better sizes)")
        return default_camera(width, height, exif_focal_35mm).matrix(), "exif", 0.0
    # The camera's height above the mat would be a guess, and from above a piece is seen by its top,
    # whose size on the mat scales with that height as well as its own: held-out renders at 85 degrees
    # with the default focal length had a tower's height written 12.2 mm short (calib_v2_any_3715) and,
    # with heights left out, a footprint 1.9 mm off passed there and a long wall 4.3 mm short on
    # calib_v2_even_3715; and with the mat's focal length 3.8 times too long (calib_v2_any_3828_v1,
    # +/-390 %) a long wall passed 3.2 mm long.
    raise PieceMeasureError(
        "no focal length known: no camera profile, none in the photo's EXIF, and the mat seen too "
        "straight-on to measure it, so the pieces' sizes cannot be measured; calibrate the camera "
        "(castellan calibrate camera) and measure with its profile, keep the photo's EXIF, or take "
        "the photo from 50-70 degrees above the table")


def _focal_too_loose(focal_error: float, height_mm: float) -> bool:
    """Whether the focal length's relative standard error alone puts a height more than
    FOCAL_HEIGHT_MAX_MM off (a height scales with the camera's height above the mat)."""
    return focal_error * height_mm > FOCAL_HEIGHT_MAX_MM


def _with_focal(K: np.ndarray, focal_px: float) -> np.ndarray:
    K[0, 0] = K[1, 1] = focal_px
    return K


def _levels(rect: np.ndarray, t01: np.ndarray, valid: np.ndarray, sigma_mm: float = 20.0):
    """Smooth black and white levels of the print, per channel, from the print's own squares."""
    ppm = RECT_PX_PER_MM
    k = int(ppm)
    h, w = t01.shape
    small = (w // k, h // k)
    out = []
    edge = cv2.morphologyEx((t01 > 0.5).astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((2 * k + 1, 2 * k + 1), np.uint8)) > 0
    for cls in (t01 < 0.2, t01 > 0.8):
        m = (cls & valid & ~edge).astype(np.float32)
        ms = cv2.resize(m, small, interpolation=cv2.INTER_AREA)
        den = cv2.GaussianBlur(ms, (0, 0), sigma_mm)
        chans = []
        for c in range(rect.shape[2]):
            num = cv2.GaussianBlur(cv2.resize(rect[:, :, c] * m, small, interpolation=cv2.INTER_AREA), (0, 0), sigma_mm)
            chans.append(cv2.resize(num / np.maximum(den, 1e-4), (w, h), interpolation=cv2.INTER_LINEAR))
        out.append(np.stack(chans, axis=2))
    return out[0], out[1]


def _difference(rect: np.ndarray, t01: np.ndarray, valid: np.ndarray, exclude: np.ndarray,
                thr: float = DIFF_THRESHOLD):
    black, white = _levels(rect, t01, valid & ~exclude)
    span = np.maximum(white - black, 20.0)
    expected = black + span * t01[:, :, None]
    # Brightness: the photo may sit up to a pixel off the template, so a pixel only differs when
    # it is outside the range the print takes in its 3 x 3 neighbourhood (no false edges).
    kernel = np.ones((3, 3), np.uint8)
    lo, hi = cv2.erode(expected, kernel), cv2.dilate(expected, kernel)
    d_lum = np.max(np.maximum(np.maximum(lo - rect, rect - hi), 0) / span, axis=2)
    # Colour: the print is neutral, so a change of colour not explained by a change of
    # brightness is a piece, even on a square's edge (how keeps are seen everywhere).
    e = (rect - expected) / np.maximum(white, 1.0)
    d_col = np.max(np.abs(e - e.mean(axis=2, keepdims=True)), axis=2) * COLOUR_WEIGHT
    d = np.maximum(d_lum, d_col)
    d[~valid] = 0
    # What a shadow looks like: darker than the paper, no change of colour, on the white of the
    # print (on black ink a shadow hardly shows). Grey plastic on white looks the same, so such
    # pixels are evidence of nothing; pieces are found from the rest.
    lum_diff = (rect - expected).mean(axis=2) / span.mean(axis=2)
    shadow_like = (t01 > 0.6) & (lum_diff < 0) & (d_col < thr)
    return d, (black, white), shadow_like


def _box_corners(params: np.ndarray, nadir: np.ndarray, cam_z: float) -> np.ndarray:
    """Footprint corners (4) and top corners projected onto the mat (4), in mat mm.

    With 9 parameters the piece is a wall with a tab at each end (the tongues that slide into the
    towers' slots): (..., depth, width, height) of the tabs as shares of the body's width, width
    and height (WALL_TAB); their corners are added (8 per tab). The body's length is the wall's
    length tower face to tower face."""
    return box_corners(np.asarray(params, np.float64), np.asarray(nadir, np.float64), float(cam_z))


def _hull(params: np.ndarray, nadir: np.ndarray, cam_z: float) -> Polygon:
    return MultiPoint(_box_corners(params, nadir, cam_z)).convex_hull


def _hull_points(params: np.ndarray, nadir: np.ndarray, cam_z: float) -> np.ndarray:
    """The projected box's outline on the mat: the convex hull of its corners, in mat mm."""
    corners = _box_corners(params, nadir, cam_z)
    return corners[cv2.convexHull(corners.astype(np.float32), returnPoints=False).ravel()]


def _model_distance(points: np.ndarray, params: np.ndarray, nadir: np.ndarray, cam_z: float) -> np.ndarray:
    """Signed distance (outside > 0) of points to the piece's projected outline: one box, or a
    wall's body and its two end tabs (the union of three projected boxes, not convex: the tabs are
    narrower than the wall, and that step is what tells the body's ends from the tabs')."""
    corners = _box_corners(params, nadir, cam_z)
    points = np.ascontiguousarray(points, np.float64)
    dist = None
    for i in range(0, len(corners), 8):
        c = corners[i:i + 8]
        hull = c[cv2.convexHull(c.astype(np.float32), returnPoints=False).ravel()]
        di = boundary_distance(points, np.ascontiguousarray(hull, np.float64))
        dist = di if dist is None else np.minimum(dist, di)
    return dist


def _start_boxes(points: np.ndarray, cam_z: float, heights: tuple[float, ...]) -> list[np.ndarray]:
    """Starting boxes for a fit: the outline's minimum-area rectangle, shrunk for each trial height
    (a taller piece's outline is blown up more by parallax), along either of its sides."""
    (cx, cy), (w0, h0), ang = cv2.minAreaRect(np.asarray(points, np.float32))
    starts = []
    for height in heights:
        k = cam_z / (cam_z - height)
        for theta, (ln, wd) in ((math.radians(ang), (w0, h0)), (math.radians(ang) + math.pi / 2, (h0, w0))):
            starts.append(np.array([cx, cy, theta, ln / k, wd / k, height]))
    return starts


def _oriented_fit(p: np.ndarray, outline: Polygon, nadir: np.ndarray, cam_z: float) -> tuple[np.ndarray, float]:
    """Fitted box with its length as the longer side, and the IoU of its projected hull with `outline`."""
    if p[4] > p[3] and len(p) == 6:
        p = np.array([p[0], p[1], p[2] + math.pi / 2, p[4], p[3], p[5]])
    hull = _hull(p, nadir, cam_z)
    inter = hull.intersection(outline).area
    return p, float(inter / (hull.area + outline.area - inter))


# A wall's end tabs (the tongues that slide into a tower's slot): depth and width as shares of the
# wall's thickness, height as a share of its height (the pieces' shape as estimated for the
# renders, synth.geometry: 0.12 and 0.22 of a tower's side, 22 mm, on a 9 mm wall; up to the
# merlons' foot less a tenth). Only the shape is assumed: the fit finds where the body ends
# from the tabs' narrower outline, so the tabs' share of the measured length depends on the view.
WALL_TAB = (0.12 * 22.0 / 9.0, 0.22 * 22.0 / 9.0, 0.73)
# A wall's crenellated top edge (pieces-and-photos.md): merlon length and gap between merlons as
# shares of the wall's thickness, merlon height as a share of the wall's height (as estimated for
# the renders, synth.geometry: 5.5 and 3.8 mm on a 9 mm wall, 0.17 of its height). A box as high
# as the merlons covers the gaps between them; one as high as their foot misses them: either way
# the fitted height came out 10-25 % low on the development renders, and a low top makes the fit
# stretch a wall's footprint away from the camera's foot point to reach its top's far end (long
# walls +0.5 mm on average, up to +3.5 mm).
WALL_MERLON = (5.5 / 9.0, 3.8 / 9.0, 0.17)


def _expand(q: np.ndarray, square: bool, tabs: bool = False) -> np.ndarray:
    """Full box parameters from a fit's: a square piece is fitted with one side for both; a wall
    gets its tabs."""
    p = np.array([q[0], q[1], q[2], q[3], q[3], q[4]]) if square else np.asarray(q, float)[:6]
    return np.concatenate([p, WALL_TAB]) if tabs else p


def _bounds(square: bool, cam_z: float) -> tuple[list[float], list[float]]:
    lo = [-np.inf, -np.inf, -np.inf, 1.0, 1.0, 0.0]
    hi = [np.inf, np.inf, np.inf, 400.0, 400.0, 0.8 * cam_z]
    if square:
        return lo[:4] + lo[5:], hi[:4] + hi[5:]
    return lo, hi


def _to_fit(p: np.ndarray, square: bool) -> np.ndarray:
    """A fit's parameters from full box parameters (the inverse of `_expand`)."""
    return np.array([p[0], p[1], p[2], (p[3] + p[4]) / 2, p[5]]) if square else np.asarray(p, float)[:6].copy()


def _fit_box(outline: Polygon, nadir: np.ndarray, cam_z: float, square: bool,
             start: np.ndarray | None = None, height_prior: tuple[float, float] | None = None,
             tabs: bool = False) -> tuple[np.ndarray, float]:
    """Fit (cx, cy, theta, length, width, height) of a box whose projected outline is `outline`.

    Least squares on the distance of the outline's points to the projected box's hull, with a
    robust loss (a few outline points straddle the print's square edges).
    """
    pts = np.asarray(outline.exterior.coords)[:-1]
    # Even spacing along the outline so long sides are not under-weighted.
    seg = np.linalg.norm(np.diff(np.vstack([pts, pts[:1]]), axis=0), axis=1)
    cum = np.concatenate([[0], np.cumsum(seg)])
    n = int(min(120, max(48, cum[-1])))
    sample = np.column_stack([np.interp(np.linspace(0, cum[-1], n, endpoint=False), cum,
                                        np.append(pts[:, i], pts[0, i])) for i in (0, 1)])

    hi_ = 4 if square else 5

    def residuals(q):
        r = _model_distance(sample, _expand(q, square, tabs), nadir, cam_z)
        if height_prior is not None:
            # When the piece stands near the camera's foot point its height and its size trade
            # off against each other; a weak pull towards the expected height settles it, and
            # is outweighed by an outline change of a tenth of a millimetre.
            h0, sigma = height_prior
            r = np.append(r, 0.1 * math.sqrt(len(sample)) * (q[hi_] - h0) / sigma)
        return r

    starts = [start] if start is not None else _start_boxes(pts, cam_z, (12.0, 25.0, 45.0))
    best = None
    lo, hi = _bounds(square, cam_z)
    for s0 in starts:
        q0 = np.clip(_to_fit(s0, square), [b + 1e-6 for b in lo], [b - 1e-6 for b in hi])
        res = optimize.least_squares(residuals, q0, loss="soft_l1", f_scale=0.5, bounds=(lo, hi))
        if best is None or res.cost < best.cost:
            best = res
    return _oriented_fit(_expand(best.x, square, tabs), outline, nadir, cam_z)
