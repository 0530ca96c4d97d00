"""The pages through Flask's test client: upload, result with rule texts, corrections, judge mode,
rulings, images, and bad uploads answered with a readable 4xx page that stores nothing."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from webapp.gen_rules import parse_rules

from .conftest import JUDGE_KEY, SMALL_CASTLE, castle_copy, jpeg_bytes


def submit_castle(client, castle: dict, players=("red", "blue")):
    return client.post("/", data={"castle": json.dumps(castle), "players": list(players)},
                       content_type="multipart/form-data")


def test_upload_page_opens_the_camera_and_lists_colours(client):
    html = client.get("/").get_data(as_text=True)
    photo_input = re.search(r'<input id="photo"[^>]*>', html).group(0)
    assert 'type="file"' in photo_input and 'name="photo"' in photo_input
    assert 'capture="environment"' in photo_input and 'accept="image/*' in photo_input
    file_input = re.search(r'<input id="photo-file"[^>]*>', html).group(0)  # or a photo already taken
    assert 'name="photo"' in file_input and "capture" not in file_input
    for colour in ("red", "blue", "yellow", "green"):
        assert f'name="players" value="{colour}"' in html
    assert 'id="progress"' in html and "upload.js" in html
    assert 'name="viewport"' in html


def test_form_post_redirects_to_the_result_with_rule_texts(client, store):
    # An unclaimed courtyard beside the red one: the scorer cites C7, whose text the page quotes.
    castle = castle_copy(keeps=[])
    r = submit_castle(client, castle)
    assert r.status_code == 303
    page = client.get(r.headers["Location"])
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "C7" in html and "Chivalry" in html  # rule id and the rule's text from rules.md
    assert store.count() == 1


def test_result_page_shows_winner_tables_and_drawing(client):
    r = submit_castle(client, SMALL_CASTLE)
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert re.search(r'id="winner">Winner: <span class="chip red">red</span>', html)
    row = re.search(r'<tr data-player="red".*?</tr>', html, re.S).group(0)
    assert '<td class="num points">12</td>' in row
    assert re.search(r'<tr data-player="blue".*?<td class="num points">0</td>', html, re.S)
    assert 'id="courtyards-table"' in html and 'id="lattice"' in html
    data = json.loads(re.search(r'<script id="castle-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data["editable"] is True and data["castle"]["towers"] == SMALL_CASTLE["towers"]


def test_only_the_uploading_browser_gets_the_correction_tools(app, client):
    location = submit_castle(client, SMALL_CASTLE).headers["Location"]
    assert 'data-tool="wall"' in client.get(location).get_data(as_text=True)
    other = app.test_client().get(location).get_data(as_text=True)
    assert 'data-tool="wall"' not in other and "Only the person who uploaded this" in other
    assert "<td class=\"num points\">12</td>" in other  # everyone can read it


def test_correction_from_the_page_is_stored_and_shown_at_the_link(app, client):
    location = submit_castle(client, castle_copy(walls=SMALL_CASTLE["walls"][:-1])).headers["Location"]
    adj_id = location.rsplit("/", 1)[1]
    # The editor's live score: nothing is stored by it.
    preview = client.post("/preview", json={"castle": SMALL_CASTLE, "players": ["red", "blue"]}).get_json()
    assert preview["result"]["players"]["red"]["score"] == 12
    assert '<td class="num points">12</td>' in preview["html"]
    # Saving uses the browser's own cookie as its right to correct.
    r = client.put(f"/api/adjudications/{adj_id}/castle", json=SMALL_CASTLE)
    assert r.status_code == 200
    html = app.test_client().get(location).get_data(as_text=True)
    assert '<td class="num points">12</td>' in html and "corrected" in html


def test_preview_refuses_an_invalid_castle(client, store):
    r = client.post("/preview", json={"castle": castle_copy(walls=[{"from": [0, 0], "to": [0, 3]}])})
    assert r.status_code == 400 and "error" in r.get_json()
    assert client.post("/preview", data="x").status_code == 400
    assert store.count() == 0


@pytest.mark.parametrize("data, needle", [
    (b"", "empty"),
    (b"just some text", "not a photo"),
    (jpeg_bytes()[:200], "cut off"),
])
def test_bad_photo_on_the_upload_page_is_a_readable_400(client, store, data, needle):
    r = client.post("/", data={"photo": (io.BytesIO(data), "p.jpg"), "players": "red"},
                    content_type="multipart/form-data")
    assert r.status_code == 400
    html = r.get_data(as_text=True)
    assert needle in html and 'id="upload-error"' in html and 'capture="environment"' in html
    assert (store.count(), store.count_images()) == (0, 0)


def test_the_filled_one_of_the_two_photo_inputs_is_used(client, store):
    # Camera input left empty, file input filled: the browser sends both fields.
    r = client.post("/", data={"photo": [(io.BytesIO(b""), ""), (io.BytesIO(b"not a photo at all"), "x.jpg")]},
                    content_type="multipart/form-data")
    assert r.status_code == 400 and "not a photo" in r.get_data(as_text=True)  # the filled one was checked
    assert store.count() == 0


def test_pressing_score_without_a_photo(client, store):
    r = client.post("/", data={"players": "red"}, content_type="multipart/form-data")
    assert r.status_code == 400 and "Choose a photo" in r.get_data(as_text=True)
    assert store.count() == 0


def test_a_refused_photo_page_gives_advice_and_the_drawing(client, store):
    pytest.importorskip("vision", reason="the photo reader (vision) is not installed")
    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray((np.random.default_rng(2).random((240, 320, 3)) * 255).astype("uint8")).save(buf, "JPEG")
    r = client.post("/", data={"photo": (io.BytesIO(buf.getvalue()), "p.jpg"), "players": ["red", "blue"]},
                    content_type="multipart/form-data")
    assert r.status_code == 303
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert 'id="refusal"' in html  # noise holds no castle
    advice = re.search(r'<p class="advice">(.*?)</p>', html, re.S).group(1).strip()
    assert len(advice) > 10  # the reader's advice, e.g. "photograph the castle from above"
    assert 'data-tool="tower"' in html  # the castle can be entered on the lattice
    assert 'id="photo-img"' in html
    assert store.count() == 1


def test_a_refused_photo_page_offers_to_add_a_photo_and_names_a_bad_one(client, store):
    # Without JavaScript the form posts to the page; what was wrong is shown on the same page, and
    # nothing is stored. A result with four photos (the most read together) offers no more.
    from webapp.storage import Image

    refused = store.create(kind="score", castle_read=None, castle_corrected=None, result=None,
                           reading={"refusal": "the photo is too dark", "players": ["red"]},
                           images=[Image("photo", "image/jpeg", jpeg_bytes())])
    html = client.get(f"/a/{refused.id}").get_data(as_text=True)
    assert f'action="/a/{refused.id}/photos"' in html and 'data-max-photos="3"' in html
    r = client.post(f"/a/{refused.id}/photos", data={"photo": (io.BytesIO(b"milk, eggs"), "list.jpg")},
                    content_type="multipart/form-data")
    html = r.get_data(as_text=True)
    assert r.status_code == 400 and "not a photo" in html and 'id="refusal"' in html
    assert store.count() == 1
    full = store.create(kind="score", castle_read=None, castle_corrected=None, result=None,
                        reading={"refusal": "the photos do not agree", "players": []},
                        images=[Image(role, "image/jpeg", jpeg_bytes()) for role in ("photo", "photo_2", "photo_3", "photo_4")])
    html = client.get(f"/a/{full.id}").get_data(as_text=True)
    assert 'id="refusal"' in html and "/photos" not in html


def test_a_score_read_from_a_photo_offers_a_check_with_another_photo(client, store):
    # A judge asked about a placement takes a photo from the other side: the page offers it beside the
    # reader's own score (without JavaScript too), not beside a castle corrected by hand, whose
    # corrections reading the photos again would set aside, nor a judge's ruling.
    from webapp import engine
    from webapp.storage import Image

    def photo_result(**fields):
        return store.create(kind="score", castle_read=SMALL_CASTLE, result=engine.score(SMALL_CASTLE),
                            reading={"confidence": 0.9, "players": []},
                            images=[Image("photo", "image/jpeg", jpeg_bytes())], **fields)

    read = photo_result(castle_corrected=None)
    html = client.get(f"/a/{read.id}").get_data(as_text=True)
    check = re.search(r'<details class="card" id="check-with-photo">(.*?)</details>', html, re.S).group(1)
    assert f'action="/a/{read.id}/photos"' in check and 'data-max-photos="3"' in check
    assert "where they disagree, the pieces in dispute are named" in check and "upload.js" in html
    r = client.post(f"/a/{read.id}/photos", data={"photo": (io.BytesIO(b"milk, eggs"), "list.jpg")},
                    content_type="multipart/form-data")
    html = r.get_data(as_text=True)
    assert r.status_code == 400 and '<details class="card" id="check-with-photo" open>' in html
    assert re.search(r'id="upload-error">[^<]*not a photo', html)  # shown in the open form, once
    assert html.count("not a photo") == 1 and store.count() == 1
    corrected = photo_result(castle_corrected=castle_copy())
    assert "check-with-photo" not in client.get(f"/a/{corrected.id}").get_data(as_text=True)
    ruled = photo_result(castle_corrected=None)
    store.mark_ruling(ruled.id, "the wall stands")
    assert "check-with-photo" not in client.get(f"/a/{ruled.id}").get_data(as_text=True)


def test_image_route_serves_the_stored_photo(client, store):
    from webapp.storage import Image

    adj = store.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None, result=None, reading={},
                       images=[Image("photo", "image/jpeg", jpeg_bytes())])
    r = client.get(f"/a/{adj.id}/image/photo")
    assert r.status_code == 200 and r.mimetype == "image/jpeg" and r.data == jpeg_bytes()
    assert client.get(f"/a/{adj.id}/image/overlay").status_code == 404
    assert client.get("/a/nope").status_code == 404


def test_judge_page_checks_a_move_between_stored_results(client, store):
    before = castle_copy(keeps=[], walls=SMALL_CASTLE["walls"][:-1])
    b_id = submit_castle(client, before).headers["Location"].rsplit("/", 1)[1]
    a_id = submit_castle(client, SMALL_CASTLE).headers["Location"].rsplit("/", 1)[1]
    page = client.get("/judge").get_data(as_text=True)
    assert f'value="{b_id}"' in page and f'value="{a_id}"' in page
    r = client.post("/judge", data={"before_stored": b_id, "after_stored": a_id, "player": "red"},
                    content_type="multipart/form-data")
    assert r.status_code == 303
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert 'id="verdict"' in html and "Pieces added" in html
    assert "1 wall:" in html and "1 keep:" in html
    data = json.loads(re.search(r'<script id="castle-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert len(data["highlight"]["walls"]) == 1  # the added wall is highlighted on the drawing
    assert store.count() == 3


def test_judge_page_with_a_castle_file_and_pasted_json(client):
    before = castle_copy(keeps=[], walls=SMALL_CASTLE["walls"][:-1])
    r = client.post("/judge", content_type="multipart/form-data", data={
        "before": (io.BytesIO(json.dumps(before).encode()), "before.json"),
        "after_text": json.dumps(SMALL_CASTLE), "player": "blue"})
    assert r.status_code == 303
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    # Blue built a wall and placed a red keep: the move check cites rules by id.
    assert re.search(r'class="rule-id">[A-Z]\d', html)


def test_judge_page_bad_input_is_a_400_with_the_form(client, store):
    r = client.post("/judge", data={"after_text": json.dumps(SMALL_CASTLE), "player": "red"},
                    content_type="multipart/form-data")
    assert r.status_code == 400
    html = r.get_data(as_text=True)
    assert "missing &#39;before&#39;" in html and 'id="judge-form"' in html
    assert store.count() == 0


def test_ruling_from_the_page_needs_the_judge_key(app, client):
    location = submit_castle(client, SMALL_CASTLE).headers["Location"]
    adj_id = location.rsplit("/", 1)[1]
    r = client.post(f"/a/{adj_id}/ruling", data={"judge_key": "wrong"})
    assert r.status_code == 403 and "judge key" in r.get_data(as_text=True)
    r = client.post(f"/a/{adj_id}/ruling", data={"judge_key": JUDGE_KEY, "note": "seen"})
    assert r.status_code == 303
    html = app.test_client().get(location).get_data(as_text=True)
    assert 'id="ruling-badge"' in html and "seen" in html
    assert 'data-tool="wall"' not in client.get(location).get_data(as_text=True)


def test_draw_page_offers_an_empty_editor(client):
    html = client.get("/draw").get_data(as_text=True)
    data = json.loads(re.search(r'<script id="castle-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data["editable"] is True and data["castle"]["towers"] == []
    assert 'data-create="/api/score"' in html


def test_rules_page_and_data_cover_every_rule_in_rules_md(client):
    spec = Path(__file__).resolve().parents[3] / "shared" / "spec" / "rules.md"
    stored = json.loads((Path(__file__).resolve().parents[2] / "webapp" / "rules.json").read_text())["rules"]
    if spec.exists():  # the copy in webapp/rules.json must be current
        assert parse_rules(spec.read_text(encoding="utf-8")) == stored
    html = client.get("/rules").get_data(as_text=True)
    for rule_id in stored:
        assert f'id="{rule_id}"' in html


def test_parse_rules_splits_several_rules_on_one_line():
    rules = parse_rules("## 3 or 4 players (M)\n- M1 Start at random; play clockwise. M2 Pieces go left (T4).\n"
                        "- M3 No deals.\n  Continued text.\n")
    assert rules["M1"]["text"] == "Start at random; play clockwise."
    assert rules["M2"]["text"] == "Pieces go left (T4)."
    assert rules["M3"]["text"] == "No deals. Continued text."


def test_a_heic_photo_is_shown_as_jpeg_and_kept_as_sent(client, store):
    from webapp.storage import Image

    from .test_uploads import heic_bytes

    heic = heic_bytes()
    adj = store.create(kind="score", castle_read=None, castle_corrected=None, result=None,
                       reading={"refusal": "take the photo from higher up"},
                       images=[Image("photo", "image/heic", heic)])
    shown = client.get(f"/a/{adj.id}/image/photo")
    assert shown.mimetype == "image/jpeg" and shown.data[:3] == b"\xff\xd8\xff"
    assert shown.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get(f"/a/{adj.id}/image/photo?original=1").data == heic
    html = client.get(f"/a/{adj.id}").get_data(as_text=True)
    assert "Take the photo from higher up." in html  # the reader's advice, as a sentence


def test_the_api_edit_url_gives_a_browser_the_correction_tools(app):
    api_client, browser = app.test_client(), app.test_client()
    created = api_client.post("/api/score", json=SMALL_CASTLE).get_json()
    assert 'data-tool="wall"' not in browser.get(f"/a/{created['id']}").get_data(as_text=True)
    assert browser.get(f"/a/{created['id']}?edit=wrong").status_code == 303
    assert 'data-tool="wall"' not in browser.get(f"/a/{created['id']}").get_data(as_text=True)
    r = browser.get(created["edit_url"])
    assert r.status_code == 303 and "edit=" not in r.headers["Location"]
    assert 'data-tool="wall"' in browser.get(f"/a/{created['id']}").get_data(as_text=True)


def _refused_with_a_guess(store):
    """A stored refusal whose reading still made a castle of the photo, unsure of one keep and one wall."""
    guess = castle_copy()
    guess["keeps"] = [dict(guess["keeps"][0], confidence=0.25, doubt="single or Double Keep", check=True)]
    guess["walls"] = [dict(w, confidence=0.3, check=True) if i == 0 else dict(w, confidence=1.0) for i, w in enumerate(guess["walls"])]
    guess["unsure_absent_walls"] = [{"from": [1, 0], "to": [1, 1]}]
    guess["towers_to_check"], guess["unsure_absent_towers"] = [[1, 0]], [[3, 0]]
    return store.create(kind="score", castle_read=None, castle_corrected=None, result=None,
                        reading={"refusal": "a keep could not be read clearly: take the photo again",
                                 "players": ["red", "blue"], "tentative_castle": guess},
                        images=[]), guess


def _castle_data(html: str) -> dict:
    return json.loads(re.search(r'<script id="castle-data" type="application/json">(.*?)</script>', html, re.S).group(1))


def test_a_refused_photo_page_starts_from_the_readers_guess_with_its_doubts_marked(client, store):
    # A player corrects the one keep the reader doubted instead of drawing 176 pieces by hand; the
    # guess is shown as a drawing, never as a score, until the player saves it.
    adj, guess = _refused_with_a_guess(store)
    html = client.get(f"/a/{adj.id}?edit={adj.edit_token}", follow_redirects=True).get_data(as_text=True)
    assert 'id="refusal"' in html and 'id="unsure-guess"' in html and "not a score" in html
    assert 'id="players-table"' not in html
    data = _castle_data(html)
    assert data["castle"] == guess and data["result"] is None and data["editable"]
    assert data["highlight"]["keeps"] == guess["keeps"] and data["highlight"]["walls"] == [guess["walls"][0]]
    assert data["highlight"]["absent_walls"] == guess["unsure_absent_walls"] and "Dashed orange lines" in html
    assert data["highlight"]["towers"] == [[1, 0]] and "1 tower)" in html
    assert data["highlight"]["absent_towers"] == [[3, 0]] and "Dashed orange squares" in html
    assert "Orange: pieces the reader doubted" in html

    checked = castle_copy()  # the player looked: the red keep is a Double Keep, as read
    r = client.put(f"/api/adjudications/{adj.id}/castle", json=checked, headers={"X-Edit-Token": adj.edit_token})
    assert r.status_code == 200, r.get_json()
    html = client.get(f"/a/{adj.id}").get_data(as_text=True)
    assert 'id="refusal"' not in html and 'id="unsure-guess"' not in html
    assert "checked and saved by hand" in html and _castle_data(html)["highlight"] is None


def test_a_refusal_without_a_guess_starts_from_an_empty_drawing(client, store):
    adj = store.create(kind="score", castle_read=None, castle_corrected=None, result=None,
                       reading={"refusal": "no castle found in the photo"}, images=[])
    html = client.get(f"/a/{adj.id}").get_data(as_text=True)
    assert 'id="unsure-guess"' not in html
    assert _castle_data(html)["castle"]["towers"] == []
