"""The calibration mat: drawn, printed to PDF, and found again at its printed scale."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.mat import PAPER_MM, PAPERS, find_mat, mat_image, mat_layout
from castellan.cli import main


def _photo_of(sheet: np.ndarray, corners_px, size: tuple[int, int], table: int = 110) -> tuple[np.ndarray, np.ndarray]:
    """The sheet warped so its corners land on `corners_px` (TL, TR, BR, BL) in a photo-sized image
    over a plain mid-grey table; returns the photo and the sheet-pixel -> photo-pixel homography."""
    src = np.float32([[0, 0], [sheet.shape[1], 0], [sheet.shape[1], sheet.shape[0]], [0, sheet.shape[0]]])
    H = cv2.getPerspectiveTransform(src, np.float32(corners_px))
    out = cv2.warpPerspective(sheet, H, size, flags=cv2.INTER_AREA, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    mask = cv2.warpPerspective(np.full_like(sheet, 255), H, size, flags=cv2.INTER_NEAREST)
    return np.where(mask > 0, out, np.uint8(table)), H


@pytest.mark.parametrize("paper", PAPERS)
def test_each_mat_is_found_and_named_with_corners_at_their_millimetres(paper):
    ppm = 3.0
    sheet, size_mm = mat_image(paper, ppm)
    assert size_mm == PAPER_MM[paper]
    assert sheet.shape == (round(size_mm[1] * ppm), round(size_mm[0] * ppm))
    det = find_mat(sheet)
    assert det is not None and det.paper == paper
    lay = mat_layout(paper)
    total = (lay.squares[0] - 1) * (lay.squares[1] - 1)
    assert len(det.corner_ids) == total
    # Pixel centres are at (u + 0.5) / px_per_mm in mat mm.
    assert np.abs((det.image_points + 0.5) / ppm - det.mat_points_mm).max() < 0.1
    assert det.px_per_mm == pytest.approx(ppm, rel=0.01)


def test_oblique_view_maps_image_to_mat_millimetres():
    sheet, (w, h) = mat_image("a4", 4.0)
    # A photo at about 45 degrees: the far edge of the sheet is much narrower than the near edge.
    photo, H = _photo_of(sheet, [[330, 120], [690, 130], [860, 620], [150, 600]], (1000, 700))
    det = find_mat(photo)
    assert det is not None and det.paper == "a4"
    assert len(det.corner_ids) >= 20
    # The true mm of a few image points, through the known warp.
    probe_mm = np.array([[20.0, 20.0], [105.0, 150.0], [190.0, 280.0]])
    probe_px = cv2.perspectiveTransform((probe_mm * 4.0 - 0.5).reshape(-1, 1, 2), H).reshape(-1, 2)
    assert np.abs(det.image_to_mat(probe_px) - probe_mm).max() < 1.0
    assert np.abs(det.mat_to_image(probe_mm) - probe_px).max() < 2.0


def test_mat_partly_covered_is_still_found():
    sheet, _ = mat_image("letter", 3.0)
    covered = sheet.copy()
    covered[: sheet.shape[0] // 2, : sheet.shape[1] // 2] = 140  # a card over a quarter of the mat
    det = find_mat(covered)
    assert det is not None and det.paper == "letter"
    assert det.rms_mm < 0.2


def test_a_small_blurred_mat_beside_a_castle_is_found_with_most_of_its_corners():
    # An A4 mat beside a whole castle, about 200 px across in a 1280 x 960 phone photo from some 60 degrees:
    # each marker is some 12 px, its white margin blurs into the black squares, so few markers are found
    # on their own (7 of 24 corners were, before the others were looked for where the board puts them).
    sheet, _ = mat_image("a4", 4.0)
    photo, H = _photo_of(sheet, [[640, 117], [836, 152], [785, 258], [581, 215]], (1280, 960))
    photo = cv2.GaussianBlur(photo, (0, 0), 0.8)
    photo = cv2.imdecode(cv2.imencode(".jpg", photo, [cv2.IMWRITE_JPEG_QUALITY, 85])[1], cv2.IMREAD_GRAYSCALE)
    det = find_mat(photo)
    assert det is not None and det.paper == "a4"
    lay = mat_layout("a4")
    assert len(det.corner_ids) >= 0.8 * (lay.squares[0] - 1) * (lay.squares[1] - 1)
    probe_mm = np.array([[40.0, 40.0], [105.0, 150.0], [170.0, 250.0]])
    probe_px = cv2.perspectiveTransform((probe_mm * 4.0 - 0.5).reshape(-1, 1, 2), H).reshape(-1, 2)
    assert np.abs(det.image_to_mat(probe_px) - probe_mm).max() < 2.0


def test_no_mat_gives_none():
    rng = np.random.default_rng(0)
    assert find_mat(np.full((300, 400), 200, np.uint8)) is None
    assert find_mat(rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)) is None


def test_unknown_paper_is_a_clear_error():
    with pytest.raises(ValueError, match="a4, letter, a3"):
        mat_image("legal", 2.0)
    with pytest.raises(ValueError, match="px_per_mm"):
        mat_image("a4", 0)


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) is not installed: scripts/setup.sh test")
@pytest.mark.parametrize("paper", ["a4", "letter"])
def test_pdf_prints_at_true_size_and_its_markers_are_found(tmp_path: Path, paper, capsys):
    pdf = tmp_path / "mat.pdf"
    assert main(["mat", "-o", str(pdf), "--paper", paper]) == 0
    assert "Print at 100 %" in capsys.readouterr().out
    dpi = 60
    subprocess.run(["pdftoppm", "-r", str(dpi), "-png", "-gray", "-singlefile", str(pdf), str(tmp_path / "page")],
                   check=True, timeout=60)
    page = cv2.imread(str(tmp_path / "page.png"), cv2.IMREAD_GRAYSCALE)
    ppm = dpi / 25.4
    w_mm, h_mm = PAPER_MM[paper]
    assert page.shape[1] == pytest.approx(w_mm * ppm, abs=1.5)
    assert page.shape[0] == pytest.approx(h_mm * ppm, abs=1.5)
    det = find_mat(page)
    assert det is not None and det.paper == paper
    # Printed scale: the squares are where the layout says, in millimetres on the page.
    assert det.px_per_mm == pytest.approx(ppm, rel=0.01)
    assert np.abs((det.image_points + 0.5) / ppm - det.mat_points_mm).max() < 0.5


def test_mat_command_rejects_bad_output(tmp_path: Path, capsys):
    assert main(["mat", "-o", str(tmp_path / "mat.png")]) == 2
    assert "must be a .pdf" in capsys.readouterr().err
    assert main(["mat", "-o", str(tmp_path / "missing-dir" / "mat.pdf")]) == 2
    assert "cannot write" in capsys.readouterr().err


@pytest.mark.parametrize("paper", PAPERS)
def test_every_sheet_carries_its_sizes_a_100mm_bar_and_the_instructions(paper):
    ppm = 4.0
    sheet, _ = mat_image(paper, ppm)
    lay = mat_layout(paper)
    below = sheet[int((lay.board_origin_mm[1] + lay.board_mm[1] + 1) * ppm):]
    inked = (below < 128).any(axis=1)
    # Bands of inked rows: the title line, the bar with its ticks, one or more instruction lines.
    bands = np.count_nonzero(inked[1:] & ~inked[:-1]) + int(inked[0])
    assert bands >= 3
    # The bar is 100 mm long at the printed scale.
    bar_rows = [r for r in range(below.shape[0]) if (below[r] < 128).sum() > 90 * ppm]
    assert bar_rows, "no 100 mm bar"
    run = np.flatnonzero(below[bar_rows[0]] < 128)
    assert (run[-1] - run[0] + 1) / ppm == pytest.approx(100, abs=0.5)


def test_a_big_photo_is_searched_reduced_and_refined_at_full_size():
    # 12 megapixels: markers are looked for on a reduced copy, corners refined on the full photo.
    ppm = 10.0
    sheet, _ = mat_image("a4", ppm, text=False)
    photo, H = _photo_of(sheet, [[1300, 420], [2750, 480], [3300, 2500], [700, 2400]], (4000, 3000))
    det = find_mat(photo)
    assert det is not None and det.paper == "a4"
    probe_mm = np.array([[30.0, 30.0], [105.0, 150.0], [180.0, 250.0]])
    probe_px = cv2.perspectiveTransform((probe_mm * ppm - 0.5).reshape(-1, 1, 2), H).reshape(-1, 2)
    assert np.abs(det.mat_to_image(probe_mm) - probe_px).max() < 1.5
