"""The overlay a user sees: pieces outlined, courtyards tinted by owner with their points."""
from __future__ import annotations

import cv2
import numpy as np

from vision.camera import Camera

OWNER_BGR = {"red": (40, 40, 220), "blue": (220, 120, 30), "yellow": (30, 210, 240), "green": (60, 180, 40), None: (160, 160, 160)}


def draw_overlay(bgr: np.ndarray, cam: Camera | None, outlines: list[tuple[np.ndarray, tuple[int, int, int]]],
                 courtyards: list[dict], refusal: str | None, confidence: float) -> np.ndarray:
    """The photo with courtyards tinted (cells projected from the lattice), piece outlines and a caption."""
    out = bgr.copy()
    if cam is not None and courtyards:
        tint = out.copy()
        labels = []
        for yard in courtyards:
            colour = OWNER_BGR.get(yard.get("owner"), OWNER_BGR[None])
            centre = []
            for cx, cy in yard["cells"]:
                quad = np.array([[cx, cy, 0], [cx + 1, cy, 0], [cx + 1, cy + 1, 0], [cx, cy + 1, 0]], float)
                poly = cam.project(quad)
                cv2.fillConvexPoly(tint, np.round(poly * 4).astype(np.int32), colour, lineType=cv2.LINE_AA, shift=2)
                centre.append(poly.mean(0))
            labels.append((np.mean(centre, axis=0), yard.get("points", 0), yard.get("double", False), yard.get("towers", 0)))
        out = cv2.addWeighted(tint, 0.35, out, 0.65, 0)
        for (x, y), pts, double, towers in labels:
            # A Double Keep courtyard shows how its points came about: towers x 2.
            text = f"{pts}={towers}x2" if double and pts else f"{pts}"
            cv2.putText(out, text, (int(x) - 8, int(y) + 5), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 3, cv2.LINE_AA)
            cv2.putText(out, text, (int(x) - 8, int(y) + 5), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
    for poly, colour in outlines:
        cv2.polylines(out, [np.round(poly * 4).astype(np.int32)], True, colour, 1, cv2.LINE_AA, shift=2)
    caption = f"refused: {refusal}" if refusal else f"confidence {confidence:.2f}"
    cv2.putText(out, caption, (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(out, caption, (8, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1, cv2.LINE_AA)
    return out
