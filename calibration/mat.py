"""The printable calibration mat: its board definition, drawing, and detection in a photo.

API note (for the renderer and the vision pipeline)
---------------------------------------------------
Coordinates: "mat millimetres" are paper coordinates of the printed sheet: origin at the top-left
corner of the paper (portrait, text at the bottom), x to the right, y downwards, in mm. A texture made
by `mat_image(paper, px_per_mm)` maps pixel centre (u, v) to mat mm ((u + 0.5) / px_per_mm,
(v + 0.5) / px_per_mm).

- `PAPERS`: the paper names, ("a4", "letter", "a3").
- `mat_layout(paper) -> MatLayout`: the geometry of one mat: `.paper_mm` (width, height),
  `.board_origin_mm` (top-left of the chessboard on the paper), `.square_mm`, `.marker_mm`,
  `.squares` (columns, rows), `.board()` (the `cv2.aruco.CharucoBoard`, in mm, board coordinates)
  and `.corner_points_mm()` (all inner ChArUco corners in mat mm, indexed by corner id).
  Each paper has its own marker ids (DICT_4X4_100), so a detection also says which mat it saw.
- `mat_image(paper, px_per_mm, *, text=True) -> (uint8 grayscale ndarray, (width_mm, height_mm))`:
  the whole sheet, white paper, board, the printed size and a line of instructions.
- `find_mat(image, *, camera_matrix=None, dist_coeffs=None) -> MatDetection | None`: finds the
  mat in a grayscale or BGR photo. `MatDetection` has `.paper`, `.layout`, `.corner_ids` (N,),
  `.image_points` (N, 2) pixel positions of those ChArUco corners, `.mat_points_mm` (N, 2),
  `.all_image_points` / `.all_mat_points_mm` (the ChArUco corners plus the corners of every marker
  read: what the homography is fitted to, useful for solvePnP), `.homography` (3x3, image px ->
  mat mm; on undistorted points when a camera is given), `.homography_inv` (mat mm -> image px),
  `.rms_mm` (fit residual), `.px_per_mm` (mean scale near the mat), and `.image_to_mat(points)` /
  `.mat_to_image(points)`. It returns None when fewer than `MIN_POINTS` points (corners of squares
  and of markers) are found, e.g. when pieces cover most of the mat.

The squares are 35 mm (38 mm on A3) with 4x4-bit markers so that a phone photo of a whole 45 cm
castle, taken from 35 degrees up, still shows each marker cell over several pixels.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import cv2
import numpy as np

PAPERS: tuple[str, ...] = ("a4", "letter", "a3")

# Paper sizes in mm, portrait (width, height).
PAPER_MM: dict[str, tuple[float, float]] = {
    "a4": (210.0, 297.0),
    "letter": (215.9, 279.4),
    "a3": (297.0, 420.0),
}

# One dictionary for every mat; each paper uses its own range of ids so the detector knows which
# mat (and so which millimetre geometry) it is looking at.
DICTIONARY_ID = cv2.aruco.DICT_4X4_100

# (squares across, squares down, square mm, marker mm, first marker id)
_BOARDS: dict[str, tuple[int, int, float, float, int]] = {
    "a4": (5, 7, 35.0, 26.0, 0),
    "letter": (5, 7, 35.0, 26.0, 17),
    "a3": (7, 10, 38.0, 28.0, 34),
}

# Top margin above the board (home printers need about 5 mm); the text goes below the board and
# must fit on Letter, the shortest sheet.
_TOP_MARGIN_MM = 8.0

# A homography from fewer points (ChArUco corners plus marker corners) than this is not trusted.
MIN_POINTS = 8

# The photo reader predicts the whole printed sheet, this text included (vision.masks.printed_mat): new wording
# makes every mat printed before read differently, so it stays as first printed. (Pieces standing on the print
# are read poorly: the README and a refusal's advice say to lay the mat beside the castle.)
INSTRUCTIONS = (
    "Print at 100 % (no 'fit to page'); check the bar measures 100 mm. "
    "Lay the mat flat beside or under the castle, fully in the photo."
)


@dataclass(frozen=True)
class MatLayout:
    """Geometry of one printed mat, in millimetres on the paper."""

    paper: str
    paper_mm: tuple[float, float]
    squares: tuple[int, int]
    square_mm: float
    marker_mm: float
    first_id: int
    board_origin_mm: tuple[float, float]

    @property
    def board_mm(self) -> tuple[float, float]:
        return (self.squares[0] * self.square_mm, self.squares[1] * self.square_mm)

    @property
    def marker_ids(self) -> np.ndarray:
        n = (self.squares[0] * self.squares[1]) // 2
        return np.arange(self.first_id, self.first_id + n, dtype=np.int32)

    def board(self) -> cv2.aruco.CharucoBoard:
        """The OpenCV board, in mm, board coordinates (origin at the board's top-left corner)."""
        return _board(self.paper)

    def corner_points_mm(self) -> np.ndarray:
        """Inner ChArUco corners in mat (paper) mm, row i = corner id i, shape (N, 2)."""
        pts = np.asarray(self.board().getChessboardCorners(), dtype=np.float64)[:, :2]
        return pts + np.asarray(self.board_origin_mm)

    def corner_points_board_3d(self) -> np.ndarray:
        """Inner corners as 3-D object points in board mm (z = 0), for camera calibration."""
        return np.asarray(self.board().getChessboardCorners(), dtype=np.float32).reshape(-1, 3)


def _check_paper(paper: str) -> str:
    key = str(paper).lower()
    if key not in PAPER_MM:
        raise ValueError(f"unknown paper {paper!r}: choose one of {', '.join(PAPERS)}")
    return key


def mat_layout(paper: str) -> MatLayout:
    """The geometry of the mat for `paper` ("a4", "letter" or "a3")."""
    key = _check_paper(paper)
    nx, ny, square, marker, first = _BOARDS[key]
    pw, _ = PAPER_MM[key]
    origin = ((pw - nx * square) / 2.0, _TOP_MARGIN_MM)
    return MatLayout(key, PAPER_MM[key], (nx, ny), square, marker, first, origin)


@lru_cache(maxsize=None)
def _dictionary() -> cv2.aruco.Dictionary:
    return cv2.aruco.getPredefinedDictionary(DICTIONARY_ID)


@lru_cache(maxsize=None)
def _board(paper: str) -> cv2.aruco.CharucoBoard:
    nx, ny, square, marker, first = _BOARDS[paper]
    ids = np.arange(first, first + (nx * ny) // 2, dtype=np.int32)
    return cv2.aruco.CharucoBoard((nx, ny), square, marker, _dictionary(), ids)


def _font(size_px: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=max(8, int(size_px)))


def mat_image(paper: str, px_per_mm: float, *, text: bool = True) -> tuple[np.ndarray, tuple[float, float]]:
    """Draw the whole sheet of `paper` at `px_per_mm`.

    Returns a uint8 grayscale image (white paper, black board) and the sheet's size in mm.
    Pixel (u, v) covers mat mm [u / px_per_mm, (u + 1) / px_per_mm) etc.
    """
    if not (px_per_mm > 0 and np.isfinite(px_per_mm)):
        raise ValueError(f"px_per_mm must be a positive number, got {px_per_mm!r}")
    layout = mat_layout(paper)
    pw, ph = layout.paper_mm
    width, height = int(round(pw * px_per_mm)), int(round(ph * px_per_mm))
    if width * height > 200_000_000:
        raise ValueError(f"px_per_mm={px_per_mm} makes a {width}x{height} image; use a smaller value")
    sheet = np.full((height, width), 255, np.uint8)

    # Draw the board at an integer number of pixels per square when possible, then place it
    # with sub-pixel accuracy by an affine warp so its millimetre position on the sheet is exact.
    nx, ny = layout.squares
    bw_mm, bh_mm = layout.board_mm
    ox, oy = layout.board_origin_mm
    sq_px = max(4, int(np.ceil(layout.square_mm * px_per_mm)))
    board_img = layout.board().generateImage((nx * sq_px, ny * sq_px), marginSize=0, borderBits=1)
    scale = bw_mm * px_per_mm / board_img.shape[1]
    # Map board pixel centres to sheet pixel centres: u_s + .5 = (ox * p) + scale * (u_b + .5).
    tx = ox * px_per_mm + 0.5 * scale - 0.5
    ty = oy * px_per_mm + 0.5 * scale - 0.5
    affine = np.array([[scale, 0.0, tx], [0.0, scale, ty]])
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    warped = cv2.warpAffine(board_img, affine, (width, height), flags=interp,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=255)
    x0, y0 = int(np.floor(ox * px_per_mm)), int(np.floor(oy * px_per_mm))
    x1, y1 = int(np.ceil((ox + bw_mm) * px_per_mm)), int(np.ceil((oy + bh_mm) * px_per_mm))
    sheet[y0:y1, x0:x1] = warped[y0:y1, x0:x1]

    if text and px_per_mm >= 1.0:
        _draw_text(sheet, layout, px_per_mm)
    return sheet, (pw, ph)


def _draw_text(sheet: np.ndarray, layout: MatLayout, px_per_mm: float) -> None:
    """Below the board: the title with the printed sizes, a 100 mm check bar, the instructions."""
    from PIL import Image, ImageDraw

    img = Image.fromarray(sheet)
    draw = ImageDraw.Draw(img)
    ox, oy = layout.board_origin_mm
    bw, bh = layout.board_mm
    pw, ph = layout.paper_mm
    y = oy + bh + 3.5
    p = px_per_mm
    title = (f"Castellan Referee calibration mat ({layout.paper.upper()}, {pw:g} x {ph:g} mm): "
             f"board {bw:g} x {bh:g} mm, squares {layout.square_mm:g} mm, markers {layout.marker_mm:g} mm")
    # Fit the text to the board width: Pillow's default font is proportional.
    size = 3.2 * p
    font = _font(size)
    while draw.textlength(title, font=font) > bw * p and size > 6:
        size *= 0.92
        font = _font(size)
    draw.text((ox * p, y * p), title, fill=0, font=font)
    y += 5.0
    # 100 mm check bar with ticks every 10 mm.
    bar_h = 2.0
    draw.rectangle([ox * p, y * p, (ox + 100.0) * p - 1, (y + bar_h) * p - 1], fill=0)
    for k in range(11):
        x = (ox + 10.0 * k) * p
        draw.rectangle([x - 0.15 * p, (y + bar_h) * p, x + 0.15 * p, (y + bar_h + 1.5) * p], fill=0)
    draw.text(((ox + 104.0) * p, (y - 0.5) * p), "100 mm", fill=0, font=font)
    y += bar_h + 3.5
    words, lines, line = INSTRUCTIONS.split(), [], ""
    for w in words:
        cand = f"{line} {w}".strip()
        if draw.textlength(cand, font=font) > bw * p and line:
            lines.append(line)
            line = w
        else:
            line = cand
    lines.append(line)
    for ln in lines:
        if y + size / p > ph - 2.0:
            raise AssertionError(f"the instructions do not fit on {layout.paper}")  # a layout bug, not input
        draw.text((ox * p, y * p), ln, fill=0, font=font)
        y += size / p * 1.35
    sheet[:] = np.asarray(img)


@dataclass
class MatDetection:
    """A mat found in a photo: matched corners and the image <-> mat-millimetre homography."""

    paper: str
    layout: MatLayout
    corner_ids: np.ndarray
    image_points: np.ndarray
    mat_points_mm: np.ndarray
    homography: np.ndarray
    homography_inv: np.ndarray
    rms_mm: float
    px_per_mm: float
    marker_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    undistorted: bool = False
    all_image_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    all_mat_points_mm: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    def image_to_mat(self, points: np.ndarray) -> np.ndarray:
        """Image pixels (N, 2) -> mat mm (N, 2). Points must be undistorted if `undistorted`."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 1, 2)
        return cv2.perspectiveTransform(pts, self.homography).reshape(-1, 2)

    def mat_to_image(self, points: np.ndarray) -> np.ndarray:
        """Mat mm (N, 2) -> image pixels (N, 2) (undistorted pixels if `undistorted`)."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 1, 2)
        return cv2.perspectiveTransform(pts, self.homography_inv).reshape(-1, 2)


def _to_gray(image: np.ndarray) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim == 3 and img.shape[2] == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2GRAY)
    elif img.ndim == 3 and img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    elif img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim != 2:
        raise ValueError(f"expected a grayscale or BGR image, got an array of shape {img.shape}")
    if img.dtype != np.uint8:
        if np.issubdtype(img.dtype, np.floating) and img.max(initial=0) <= 1.0:
            img = img * 255.0
        img = np.clip(img, 0, 255).astype(np.uint8)
    return img


def _marker_detector() -> cv2.aruco.ArucoDetector:
    params = cv2.aruco.DetectorParameters()
    # Sub-pixel marker corners give the ChArUco interpolation a better start.
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    # A mat beside a whole castle is small in the photo: accept markers down to about 3 px a side per
    # 1000 px of photo (OpenCV's default wants 7.5), thresholded at finer window steps.
    params.minMarkerPerimeterRate = 0.01
    params.adaptiveThreshWinSizeMin = 3
    params.adaptiveThreshWinSizeStep = 4
    return cv2.aruco.ArucoDetector(_dictionary(), params)


@dataclass
class _Found:
    paper: str
    corner_ids: np.ndarray  # (N,) ChArUco corner ids
    corners: np.ndarray  # (N, 2) image px
    marker_ids: np.ndarray  # (M,)
    marker_corners: np.ndarray  # (M, 4, 2) image px


def _detect(gray: np.ndarray, paper: str | None, max_side: int) -> _Found | None:
    gray = _to_gray(gray)
    h, w = gray.shape
    scale = min(1.0, max_side / max(h, w))
    small = cv2.resize(gray, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_AREA) if scale < 1 else gray
    detector = _marker_detector()
    corners, ids, rejected = detector.detectMarkers(small)
    if ids is None or len(ids) == 0:
        return None
    ids = ids.ravel()
    papers = [_check_paper(paper)] if paper else list(PAPERS)
    best: tuple[str, np.ndarray] | None = None
    for name in papers:
        sel = np.isin(ids, mat_layout(name).marker_ids)
        if sel.sum() and (best is None or sel.sum() > best[1].sum()):
            best = (name, sel)
    if best is None:
        return None
    name, sel = best
    # A mat beside a whole castle is small in the photo, and a marker's white margin then blurs into the
    # black squares at its corners, so most markers are not found on their own. Where the board's layout,
    # fitted to the markers found, puts the others, OpenCV looks again among the shapes it set aside
    # (each must still read as its own marker's code).
    corners, ids, *_ = detector.refineDetectedMarkers(
        small, _board(name), tuple(c for c, s in zip(corners, sel) if s), ids[sel].reshape(-1, 1), rejected)
    mk_ids = ids.ravel().astype(np.int32)
    mk_corners = [np.asarray(c, np.float32).reshape(4, 2) for c in corners]
    if scale < 1:
        # Marker corners found on the reduced image: map back, then refine at full resolution.
        mk_corners = [(c + 0.5) / scale - 0.5 for c in mk_corners]
        crit = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_COUNT, 30, 0.01)
        win = max(2, int(round(1.5 / scale)))
        mk_corners = [cv2.cornerSubPix(gray, c.reshape(-1, 1, 2).astype(np.float32), (win, win), (-1, -1), crit).reshape(4, 2)
                      for c in mk_corners]
    det = cv2.aruco.CharucoDetector(_board(name))
    ch_corners, ch_ids, _, _ = det.detectBoard(gray, markerCorners=tuple(c.reshape(1, 4, 2) for c in mk_corners),
                                               markerIds=mk_ids.reshape(-1, 1))
    if ch_ids is None or len(ch_ids) == 0:
        cids, cpts = np.zeros(0, np.int32), np.zeros((0, 2))
    else:
        cids, cpts = ch_ids.ravel().astype(np.int32), ch_corners.reshape(-1, 2).astype(np.float64)
    return _Found(name, cids, cpts, mk_ids, np.asarray(mk_corners, np.float64).reshape(-1, 4, 2))


def detect_charuco(gray: np.ndarray, paper: str | None = None,
                   max_side: int = 3000) -> tuple[str, np.ndarray, np.ndarray, np.ndarray] | None:
    """Find ChArUco corners of one of the mats in a grayscale image.

    Returns (paper, corner_ids (N,), image_points (N, 2), marker_ids) for the mat with most markers,
    or None when no ChArUco corner is found. Big photos are searched for markers at most `max_side`
    pixels wide; the corners are then refined at full resolution.
    """
    found = _detect(gray, paper, max_side)
    if found is None or len(found.corner_ids) == 0:
        return None
    return found.paper, found.corner_ids, found.corners, found.marker_ids


def _marker_points_mm(layout: MatLayout, marker_ids: np.ndarray) -> np.ndarray:
    """Corners (M, 4, 2) of the given markers in mat mm, in OpenCV's corner order."""
    board = layout.board()
    obj = np.asarray(board.getObjPoints(), np.float64)[:, :, :2]
    index = {int(i): k for k, i in enumerate(np.ravel(board.getIds()))}
    return obj[[index[int(i)] for i in marker_ids]] + np.asarray(layout.board_origin_mm)


def fit_homography(image_pts: np.ndarray, mat_pts: np.ndarray,
                   tolerance_mm: float) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Image -> mat-mm homography: RANSAC guards against mis-read points (more than `tolerance_mm` off),
    then a plain fit on the rest. Returns (H, which points were kept, their RMS error in mm), or None
    when it fails or fewer than MIN_POINTS are kept."""
    H, inliers = cv2.findHomography(image_pts, mat_pts, cv2.RANSAC, tolerance_mm)
    if H is None:
        return None
    keep = inliers.ravel().astype(bool)
    if keep.sum() < MIN_POINTS:
        return None
    H, _ = cv2.findHomography(image_pts[keep], mat_pts[keep], 0)
    if H is None:
        return None
    proj = cv2.perspectiveTransform(image_pts[keep].reshape(-1, 1, 2), H).reshape(-1, 2)
    return H, keep, float(np.sqrt(np.mean(np.sum((proj - mat_pts[keep]) ** 2, axis=1))))


def find_mat(image: np.ndarray, *, camera_matrix: np.ndarray | None = None,
             dist_coeffs: np.ndarray | None = None, paper: str | None = None) -> MatDetection | None:
    """Find the calibration mat in a photo (grayscale or BGR ndarray).

    The homography is fitted to the ChArUco corners and to the corners of the markers read (the
    markers still count when pieces standing on the mat hide the squares' corners around them).
    With a camera matrix (and distortion), points are undistorted first (into the same camera
    matrix's pixels) so the homography is exact for a distorting lens; callers then map
    undistorted points (`cv2.undistortPoints(..., P=camera_matrix)`).
    Returns None when the mat is absent or fewer than MIN_POINTS of its points are readable.
    """
    found = _detect(image, paper, 3000)
    if found is None:
        return None
    layout = mat_layout(found.paper)
    cids, img_pts = found.corner_ids, found.corners
    mat_pts = layout.corner_points_mm()[cids]
    all_img = np.vstack([img_pts.reshape(-1, 2), found.marker_corners.reshape(-1, 2)])
    all_mat = np.vstack([mat_pts.reshape(-1, 2), _marker_points_mm(layout, found.marker_ids).reshape(-1, 2)])
    if len(all_img) < MIN_POINTS:
        return None
    undistorted = camera_matrix is not None
    fit_pts = all_img
    if undistorted:
        k = np.asarray(camera_matrix, np.float64)
        d = np.zeros(5) if dist_coeffs is None else np.asarray(dist_coeffs, np.float64)
        fit_pts = cv2.undistortPoints(all_img.reshape(-1, 1, 2), k, d, P=k).reshape(-1, 2)
    fitted = fit_homography(fit_pts, all_mat, 2.0)
    if fitted is None:
        return None
    H, keep, rms = fitted
    Hinv = np.linalg.inv(H)
    # Local scale at the mat's centre: pixels per mm from the Jacobian of mm -> px.
    c = np.asarray(layout.board_origin_mm) + np.asarray(layout.board_mm) / 2
    p = cv2.perspectiveTransform(np.array([[c, c + [1.0, 0], c + [0, 1.0]]], np.float64), Hinv)[0]
    px_per_mm = float((np.linalg.norm(p[1] - p[0]) + np.linalg.norm(p[2] - p[0])) / 2)
    n = len(cids)
    keep_c = keep[:n]
    return MatDetection(found.paper, layout, cids[keep_c], img_pts[keep_c], mat_pts[keep_c], H, Hinv, rms,
                        px_per_mm, found.marker_ids, undistorted, all_img[keep], all_mat[keep])


def write_mat_pdf(path: str, paper: str = "a4", dpi: int = 300) -> tuple[float, float]:
    """Write the mat as a one-page PDF at true printed size; returns the page size in mm.

    The page is a 1-bit raster at `dpi` (Pillow's PDF writer sets the page size from it), so the
    board prints at exactly the millimetres drawn when printed at 100 %.
    """
    from PIL import Image

    if not 72 <= int(dpi) <= 1200:
        raise ValueError(f"dpi must be between 72 and 1200, got {dpi}")
    px_per_mm = int(dpi) / 25.4
    sheet, size_mm = mat_image(paper, px_per_mm)
    img = Image.fromarray(sheet).convert("1", dither=Image.Dither.NONE)
    # The page size in the PDF is pixels / dpi; the sheet was rounded to whole pixels, so the
    # page is within half a pixel (0.04 mm at 300 dpi) of the paper size.
    img.save(path, "PDF", resolution=float(dpi), title=f"Castellan Referee calibration mat ({paper})")
    return size_mm
