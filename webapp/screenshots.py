"""Take the README's screenshots of the upload, result and judge pages on a 375-pixel phone screen:

    python -m webapp.screenshots docs/screenshots [PHOTO]

Runs the app under waitress on loopback with a throwaway database, fills it with a rendered sample
photo (when sample_photos/ has one) or a castle from the rules engine's game generator, and drives
Debian's Chromium with Playwright. PHOTO is uploaded too; if it is read, its result page becomes
photo-read.png.
"""
from __future__ import annotations

import glob
import json
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[1]


def _post_json(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright
    from waitress.server import create_server

    from scoring.generate import random_finished_castle
    from webapp import create_app

    out = Path(argv[0] if argv else ROOT / "docs" / "screenshots")
    photo_arg = argv[1] if len(argv) > 1 else None
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"DATABASE": str(Path(tmp) / "db.sqlite3"), "SECRET_KEY": "shots"})
        server = create_server(app, host="127.0.0.1", port=0, threads=4)
        threading.Thread(target=server.run, daemon=True).start()
        base = f"http://127.0.0.1:{server.effective_port}"
        after = random_finished_castle(7, ["red", "blue"]).to_json()
        # The state before the last turn: the castle without its last two walls and last keep.
        before = dict(after, walls=after["walls"][:-2], keeps=after["keeps"][:-1])
        before_id = _post_json(base + "/api/score", before)["id"]
        after_id = _post_json(base + "/api/score", after)["id"]
        # Photos with their ground truth beside them (not the contact sheet).
        photos = sorted(p for p in glob.glob(str(ROOT / "sample_photos" / "**" / "*.jpg"), recursive=True)
                        if Path(p).with_suffix(".json").exists())
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 375, "height": 812}, device_scale_factor=2,
                                       is_mobile=True, has_touch=True).new_page()
            page.goto(base + "/")
            page.screenshot(path=str(out / "upload.png"))
            page.goto(base + "/draw")
            page.click("text=Edit as castellan/1 JSON")
            page.fill("#castle-json", json.dumps(after))
            page.click("#load-json")
            page.wait_for_selector("#players-table")
            page.click("#save")
            page.wait_for_url("**/a/*", timeout=60_000)
            page.wait_for_timeout(500)
            page.screenshot(path=str(out / "result.png"), full_page=True)
            # Photos: a rendered sample (its result, or its refusal with the reader's advice, then the
            # castle entered from the sample's ground truth), else a bare table (a refusal); and PHOTO,
            # when given, as a second upload.
            sample = Path(photos[0]) if photos else None
            if sample is None:
                import io

                import numpy as np
                from PIL import Image

                buf = io.BytesIO()
                table = np.full((900, 1200, 3), (150, 115, 80), np.uint8)
                table += (np.random.default_rng(3).random((900, 1200, 1)) * 25).astype(np.uint8)
                Image.fromarray(table).save(buf, "JPEG", quality=85)
                sample = Path(tmp) / "table.jpg"
                sample.write_bytes(buf.getvalue())
            for photo in [sample] + ([Path(photo_arg)] if photo_arg else []):
                page.goto(base + "/")
                page.set_input_files("#photo", str(photo))
                page.click("#score-button")
                page.wait_for_url("**/a/*", timeout=180_000)
                page.wait_for_timeout(300)
                refused = page.locator("#refusal").count() > 0
                page.screenshot(path=str(out / ("photo.png" if refused else "photo-read.png")), full_page=not refused)
                truth = photo.with_suffix(".json")
                if refused and truth.exists():
                    castle = json.loads(truth.read_text()).get("castle")
                    page.click("text=Edit as castellan/1 JSON")
                    page.fill("#castle-json", json.dumps(castle))
                    page.click("#load-json")
                    page.wait_for_selector("#players-table")
                    page.click("#save")
                    page.wait_for_selector("#edit-status:has-text('Saved')")
                    page.reload()
                    page.wait_for_timeout(300)
                    page.screenshot(path=str(out / "photo-corrected.png"), full_page=True)
            page.goto(base + "/judge")
            page.select_option('select[name="before_stored"]', before_id)
            page.select_option('select[name="after_stored"]', after_id)
            page.click('label:has(input[name="player"][value="blue"])')
            page.screenshot(path=str(out / "judge.png"), full_page=True)
            page.click("text=Check the move")
            page.wait_for_url("**/a/*")
            page.wait_for_timeout(300)
            page.screenshot(path=str(out / "move.png"), full_page=True)
            browser.close()
        server.close()
    print(f"screenshots written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
