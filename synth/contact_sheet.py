"""One image of captioned thumbnails, so a reader sees a photo set's variety at a glance."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


def contact_sheet(images: list[Path], out: Path, *, columns: int = 6, thumb_width: int = 400,
                  captions: list[str] | None = None, quality: int = 85) -> Path:
    """Tile `images` (any sizes; each fitted into a 4:3 cell) with a caption under each, write a JPEG."""
    if not images:
        raise ValueError("no images for the contact sheet")
    cell_w, cell_h, caption_h, pad = thumb_width, thumb_width * 3 // 4, 22, 6
    rows = (len(images) + columns - 1) // columns
    sheet = np.full((rows * (cell_h + caption_h + pad) + pad, columns * (cell_w + pad) + pad, 3), 30, np.uint8)
    for i, path in enumerate(images):
        img = cv2.imread(str(path))
        if img is None:
            raise ValueError(f"{path}: not a readable image")
        scale = min(cell_w / img.shape[1], cell_h / img.shape[0])
        thumb = cv2.resize(img, (int(img.shape[1] * scale), int(img.shape[0] * scale)), interpolation=cv2.INTER_AREA)
        r, c = divmod(i, columns)
        y = pad + r * (cell_h + caption_h + pad) + (cell_h - thumb.shape[0]) // 2
        x = pad + c * (cell_w + pad) + (cell_w - thumb.shape[1]) // 2
        sheet[y:y + thumb.shape[0], x:x + thumb.shape[1]] = thumb
        if captions:
            ty = pad + r * (cell_h + caption_h + pad) + cell_h + 16
            cv2.putText(sheet, captions[i], (pad + c * (cell_w + pad) + 2, ty), cv2.FONT_HERSHEY_SIMPLEX,
                        0.42, (235, 235, 235), 1, cv2.LINE_AA)
    out = Path(out)
    cv2.imwrite(str(out), sheet, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return out
