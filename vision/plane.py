"""Stage: the table plane and the camera pose, from the calibration mat or from the castle itself.

With the mat: its ChArUco corners give the image <-> table-millimetre homography directly
(calibration.mat.find_mat), and the pose follows from it and the focal length.
Without it: the walls run in two orthogonal directions, so their edges' two vanishing points give the
table's orientation (a Manhattan-world estimate); the position along the viewing ray only sets the
scale, which the lattice fit then fixes (table units = camera height until the pitch is known).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.camera import Camera, focal_from_homography, intrinsics


@dataclass
class TablePose:
    camera: Camera  # table units: mm (mat) or camera heights (castle)
    source: str  # "mat" or "castle"
    unit: str  # "mm" or "camera-height"
    quality: float  # 0..1, how well the plane was determined
    focal_source: str
    mat_to_image: np.ndarray | None = None  # homography: mat millimetres -> image pixels (None: no mat)
    mat_paper: str | None = None  # the mat's paper size ("a4", "letter", "a3")

    @property
    def mat_corners(self) -> np.ndarray | None:
        """Image polygon (4, 2) of the mat's paper, or None without a mat."""
        if self.mat_to_image is None or self.mat_paper is None:
            return None
        from calibration.mat import mat_layout

        pw, ph = mat_layout(self.mat_paper).paper_mm
        corners = np.array([[[0, 0], [pw, 0], [pw, ph], [0, ph]]], float)
        return cv2.perspectiveTransform(corners, np.asarray(self.mat_to_image, np.float64))[0]


def _focal(width: int, height: int, given_focal: float | None, given_source: str,
           H: np.ndarray | None) -> tuple[np.ndarray, str]:
    if given_focal is not None:
        return intrinsics(width, height, given_focal), given_source
    if H is not None:
        f = focal_from_homography(H, width, height)
        if f is not None:
            return intrinsics(width, height, f), "mat"
    return intrinsics(width, height), "default"


def pose_from_mat(bgr: np.ndarray, given_focal: float | None, given_source: str = "exif") -> TablePose | None:
    """The table plane from the calibration mat; `given_focal` (pixels) is the photo's EXIF or camera
    profile focal length (`given_source`: "exif" or "profile"), else it is measured from the mat."""
    try:
        from calibration.mat import find_mat
    except ImportError:  # the calibration package is optional for the castle-only path
        return None
    det = find_mat(bgr)
    if det is None:
        return None
    h, w = bgr.shape[:2]
    H = det.homography_inv  # mat mm -> image px
    K, fsrc = _focal(w, h, given_focal, given_source, H)
    cam = _camera_from_mat_points(det.all_mat_points_mm, det.all_image_points, K) or Camera.from_homography(H, K)
    quality = float(np.clip(1.0 - det.rms_mm / 2.0, 0.0, 1.0)) * min(1.0, len(det.corner_ids) / 12.0)
    return TablePose(cam, "mat", "mm", quality, fsrc, H, det.paper)


def _camera_from_mat_points(mat_mm: np.ndarray, image_px: np.ndarray, K: np.ndarray) -> Camera | None:
    """The pose that best reprojects the mat's points (OpenCV's planar PnP, then refined).

    Decomposing the homography directly is several times less accurate for a mat that fills only a
    corner of the photo (a median 2.6 degrees of table tilt against 0.5 on the development renders).
    """
    if len(mat_mm) < 6:
        return None
    obj = np.c_[np.asarray(mat_mm, np.float64).reshape(-1, 2), np.zeros(len(mat_mm))]
    img = np.asarray(image_px, np.float64).reshape(-1, 2)
    # A small plane seen from afar has two poses that fit almost equally well (IPPE returns both);
    # the one no phone held upright could have taken loses.
    n, rvecs, tvecs, errors = cv2.solvePnPGeneric(obj, img, K, None, flags=cv2.SOLVEPNP_IPPE)
    best = None
    for rvec, tvec, err in zip(rvecs, tvecs, np.ravel(errors) if errors is not None else [0.0] * n):
        ok, rvec, tvec = cv2.solvePnP(obj, img, K, None, rvec.copy(), tvec.copy(), True, flags=cv2.SOLVEPNP_ITERATIVE)
        if not ok:
            continue
        R, t = cv2.Rodrigues(rvec)[0], tvec.ravel()
        if float(R[:, 2] @ -t) < 0:  # heights must point from the table towards the camera
            R = R.copy()
            R[:, 2] = -R[:, 2]
        key = (_implausible_table(-R[:, 2] if R[2, 2] > 0 else R[:, 2]), float(err))
        if best is None or key < best[0]:
            best = (key, Camera(np.asarray(K, float), R, t))
    return None if best is None else best[1]


# ---------------------------------------------------------------------------------------------------
# Without the mat: vanishing points of the wall edges.

def line_segments(bgr: np.ndarray) -> np.ndarray:
    """All line segments (N, 4: x1, y1, x2, y2) of the photo, by OpenCV's LSD."""
    gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    lines = cv2.createLineSegmentDetector(cv2.LSD_REFINE_STD).detect(gray)[0]
    return np.zeros((0, 4)) if lines is None else lines.reshape(-1, 4).astype(float)


def _segments(segs: np.ndarray, region: np.ndarray, min_len: float) -> np.ndarray:
    if len(segs) == 0:
        return segs
    length = np.hypot(segs[:, 2] - segs[:, 0], segs[:, 3] - segs[:, 1])
    mid = ((segs[:, :2] + segs[:, 2:]) / 2).round().astype(int)
    h, w = region.shape
    inside = region[np.clip(mid[:, 1], 0, h - 1), np.clip(mid[:, 0], 0, w - 1)]
    return segs[(length >= min_len) & inside]


def _vp_consistency(segs: np.ndarray, vps: np.ndarray) -> np.ndarray:
    """Angle (radians) between each segment and the direction from its midpoint to each vanishing point
    (M, 3): (N segments, M)."""
    d = (segs[:, 2:] - segs[:, :2])[:, None, :]
    mid = ((segs[:, :2] + segs[:, 2:]) / 2)[:, None, :]
    at_infinity = np.abs(vps[:, 2]) < 1e-9
    finite = np.where(at_infinity, 1.0, vps[:, 2])
    to_vp = np.where(at_infinity[None, :, None], vps[None, :, :2], vps[None, :, :2] / finite[None, :, None] - mid)
    cross = d[..., 0] * to_vp[..., 1] - d[..., 1] * to_vp[..., 0]
    dot = d[..., 0] * to_vp[..., 0] + d[..., 1] * to_vp[..., 1]
    return np.abs(np.arctan2(np.abs(cross), np.abs(dot)))


def _refine_vp(segs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    p1 = np.c_[segs[:, :2], np.ones(len(segs))]
    p2 = np.c_[segs[:, 2:], np.ones(len(segs))]
    lines = np.cross(p1, p2)
    lines /= np.linalg.norm(lines[:, :2], axis=1, keepdims=True)
    M = (lines * weights[:, None]).T @ lines
    _, vecs = np.linalg.eigh(M)
    return vecs[:, 0]


def _weighted_pairs(rng: np.random.Generator, idx: np.ndarray, prob: np.ndarray, n: int) -> np.ndarray:
    """n pairs (n, 2) of distinct entries of idx drawn by weight: the pairs, and the random stream, of n calls
    of rng.choice(idx, 2, replace=False, p=prob), which sums and checks all of prob on every call (on a
    12-megapixel photo's segments most of the vanishing-point search's time)."""
    cdf = np.cumsum(prob)
    cdf /= cdf[-1]
    pairs = np.empty((n, 2), dtype=idx.dtype)
    for i in range(n):
        a, b = cdf.searchsorted(rng.random(2), side="right")
        while a == b:  # as numpy does: the first drawn is taken out and the second drawn again
            rest = prob.copy()
            rest[a] = 0.0
            rest_cdf = np.cumsum(rest)
            rest_cdf /= rest_cdf[-1]
            b = rest_cdf.searchsorted(rng.random(1), side="right")[0]
        pairs[i] = idx[a], idx[b]
    return pairs


def find_vanishing_points(segs: np.ndarray, k: int = 3, tol_deg: float = 1.5, iters: int = 400,
                          seed: int = 0) -> list[tuple[np.ndarray, float, np.ndarray]]:
    """Up to k vanishing points by sequential RANSAC: (vp homogeneous, support length, inlier mask).

    Works in normalised coordinates supplied by the caller (so points at infinity are well behaved).
    """
    rng = np.random.default_rng(seed)
    length = np.hypot(segs[:, 2] - segs[:, 0], segs[:, 3] - segs[:, 1])
    remaining = np.ones(len(segs), bool)
    out = []
    tol = math.radians(tol_deg)
    p1 = np.c_[segs[:, :2], np.ones(len(segs))]
    p2 = np.c_[segs[:, 2:], np.ones(len(segs))]
    lines = np.cross(p1, p2)
    for _ in range(k):
        idx = np.nonzero(remaining)[0]
        if len(idx) < 4:
            break
        prob = length[idx] / length[idx].sum()
        pairs = _weighted_pairs(rng, idx, prob, iters)
        # Every hypothesis is tested against every segment at once (one call per hypothesis was 13 % of a
        # photo's time); the first of the best wins, as when they were tried one by one.
        (a0, a1, a2), (b0, b1, b2) = lines[pairs[:, 0]].T, lines[pairs[:, 1]].T
        vps = np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)
        norms = np.sqrt(np.einsum("ij,ij->i", vps, vps))
        usable = norms >= 1e-12
        vps[usable] /= norms[usable, None]
        scores = np.zeros(iters)
        for lo in range(0, iters, 100):
            chunk = np.nonzero(usable[lo:lo + 100])[0] + lo
            inl = remaining[:, None] & (_vp_consistency(segs, vps[chunk]) < tol)
            scores[chunk] = np.where(inl, length[:, None], 0.0).sum(axis=0)
        if not np.any(scores > 0.0):
            break
        best = vps[int(np.argmax(scores))]
        inl = remaining & (_vp_consistency(segs, best[None])[:, 0] < tol)
        vp = _refine_vp(segs[inl], length[inl])
        inl = remaining & (_vp_consistency(segs, vp[None])[:, 0] < tol)
        out.append((vp, float(length[inl].sum()), inl))
        remaining &= ~inl
    return out


def pose_from_castle(bgr: np.ndarray, region: np.ndarray, given_focal: float | None,
                     all_segments: np.ndarray | None = None, given_source: str = "exif") -> TablePose | None:
    """Table orientation from the two orthogonal wall directions; None when they cannot be seen.
    `given_focal` and `given_source` as for pose_from_mat; without one the focal length is found too."""
    h, w = bgr.shape[:2]
    if all_segments is None:
        all_segments = line_segments(bgr)
    segs = _segments(all_segments, region, min_len=max(8.0, 0.012 * max(h, w)))
    if len(segs) < 8:
        return None
    # Normalise: centre and scale by the image diagonal so points at infinity are well conditioned.
    s = math.hypot(w, h)
    N = np.array([[1 / s, 0, -w / (2 * s)], [0, 1 / s, -h / (2 * s)], [0, 0, 1]])
    nsegs = np.c_[(segs[:, :2] - [w / 2, h / 2]) / s, (segs[:, 2:] - [w / 2, h / 2]) / s]
    vps = find_vanishing_points(nsegs, k=3)
    if len(vps) < 2:
        return None
    total = sum(v[1] for v in vps)
    Ninv = np.linalg.inv(N)
    best = None
    # The strongest pair of orthogonal families, read either as the two wall directions or as one wall
    # direction and the vertical (the towers' upright edges); the table normal they imply must look
    # like a table seen by a phone held upright.
    for a in range(len(vps)):
        for b in range(len(vps)):
            if a == b:
                continue
            va, vb = Ninv @ vps[a][0], Ninv @ vps[b][0]
            K = _pair_intrinsics(va, vb, w, h, given_focal)
            if K is None:
                continue
            da, db = _unit(np.linalg.solve(K, va)), _unit(np.linalg.solve(K, vb))
            ortho = abs(float(da @ db))
            support = (vps[a][1] + vps[b][1]) / total
            if a < b:  # a and b are the walls: the table normal is across them
                up, r1 = _unit(np.cross(da, db)), da
                score = support - 2.0 * ortho
            else:  # a is a wall, b the vertical: a wall family seen edge-on, with fewer long edges
                up, r1 = db, da
                score = support - 2.0 * ortho - 0.25
            if up[2] > 0:  # the normal points back towards the camera (which looks along +z)
                up = -up
            # Not a table a phone could see. Without any such pair, the wall directions were not found: a
            # pose from them rectifies the castle into streaks, which look like one clear direction, and was
            # once preferred to a right pose from the other outline (unseen59 h554005_044: 8 degrees against 66).
            if _implausible_table(up):
                continue
            # A third family along the implied vertical (or the other wall direction) confirms it.
            for c in range(len(vps)):
                if c not in (a, b):
                    dc = _unit(np.linalg.solve(K, Ninv @ vps[c][0]))
                    if abs(float(dc @ (up if a < b else np.cross(up, r1)))) > 0.97:
                        score += 0.3 * vps[c][1] / total
            if best is None or score > best[0]:
                best = (score, up, r1, K, ortho, support)
    if best is None:
        return None
    _, up, r1, K, ortho, support = best
    r1 = _unit(r1 - (r1 @ up) * up)
    r2 = np.cross(up, r1)
    ys, xs = np.nonzero(region)
    c = np.array([xs.mean(), ys.mean(), 1.0]) if len(xs) else np.array([w / 2, h / 2, 1.0])
    ray = np.linalg.solve(K, c)
    depth = 1.0 / abs(float(up @ ray))
    t = ray * depth  # the table origin: the castle's centre, camera height 1
    cam = Camera(K, np.stack([r1, r2, up], axis=1), t)
    quality = float(np.clip(support, 0, 1) * np.clip(1 - ortho / 0.2, 0, 1))
    fsrc = given_source if given_focal is not None else ("vanishing-points" if K[0, 0] != intrinsics(w, h)[0, 0] else "default")
    return TablePose(cam, "castle", "camera-height", quality, fsrc)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(1e-12, float(np.linalg.norm(v)))


def _implausible_table(up: np.ndarray) -> float:
    """Penalty for a table normal (camera frame, pointing at the camera) no photo of a table has.

    The camera must look down onto the table at 20 degrees or more, and a phone is held upright: the
    table's "up" points to the top of the picture (its y component is negative) unless the view is
    nearly straight down. A wall face mistaken for the table breaks the second test even when its
    apparent elevation looks plausible.
    """
    elev = math.degrees(math.asin(min(1.0, abs(float(up[2])))))
    return (5.0 if elev < 20.0 else 0.0) + (5.0 if up[1] > 0.15 else 0.0)


def _pair_intrinsics(va: np.ndarray, vb: np.ndarray, w: int, h: int, exif_focal: float | None) -> np.ndarray | None:
    if exif_focal is not None:
        return intrinsics(w, h, exif_focal)
    c = np.array([w / 2, h / 2])
    diag = math.hypot(w, h)
    finite = abs(va[2]) > 1e-9 and abs(vb[2]) > 1e-9
    if finite:
        pa, pb = va[:2] / va[2] - c, vb[:2] / vb[2] - c
        f2 = -float(pa @ pb)
        # Only trust f from vanishing points when both are reasonably close (a clearly oblique view).
        if f2 > 0 and max(np.linalg.norm(pa), np.linalg.norm(pb)) < 8 * diag:
            f = math.sqrt(f2)
            if 0.5 * diag < f < 3.0 * diag:
                return intrinsics(w, h, f)
    return intrinsics(w, h)
