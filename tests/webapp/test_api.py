"""The JSON API through Flask's test client: every route, and bad input answered with a clear 4xx
JSON error that stores nothing."""
from __future__ import annotations

import io
import json

import pytest

from webapp.uploads import DEFAULT_MAX_PHOTO_BYTES

from .conftest import JUDGE_KEY, SMALL_CASTLE, castle_copy, jpeg_bytes, png_bytes


def stored_counts(store) -> tuple[int, int]:
    return store.count(), store.count_images()


def post_photo(client, data: bytes, field: str = "photo", filename: str = "castle.jpg", **form):
    return client.post("/api/score", data={field: (io.BytesIO(data), filename), **form},
                       content_type="multipart/form-data")


# --- OpenAPI ----------------------------------------------------------------------------------

def test_openapi_documents_every_api_route(app, client):
    doc = client.get("/openapi.json").get_json()
    assert doc["openapi"].startswith("3.")
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = rule.rule.replace("<adj_id>", "{adj_id}")
            for method in rule.methods - {"HEAD", "OPTIONS"}:
                assert (path, method.lower()) in documented, f"{method} {path} missing from /openapi.json"
    # A valid OpenAPI 3.1 document (checked last: without the validator the checks above still run).
    validator = pytest.importorskip("openapi_spec_validator", reason="pip install openapi-spec-validator")
    validator.validate(doc)
    # Every $ref points at a schema that exists.
    refs = set()

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                refs.add(node["$ref"].rsplit("/", 1)[-1])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    assert refs <= set(doc["components"]["schemas"])


# --- scoring a castle ---------------------------------------------------------------------------

def test_score_a_castle_returns_the_score_and_a_stored_link(client, store):
    r = client.post("/api/score", json=SMALL_CASTLE)
    assert r.status_code == 201
    body = r.get_json()
    assert body["format"] == "castellan-score/1"
    assert body["players"]["red"]["score"] == 12 and body["winners"] == ["red"]
    assert body["url"].endswith(f"/a/{body['id']}") and r.headers["Location"] == body["url"]
    stored = client.get(f"/api/adjudications/{body['id']}").get_json()
    assert stored["result"]["players"] == body["players"]
    assert stored["castle_read"]["towers"] == SMALL_CASTLE["towers"]
    assert stored["castle_corrected"] is None and stored["ruling"] is False
    assert "edit_token" not in stored  # only the creator gets it
    assert store.count() == 1


def test_score_as_multipart_castle_field_with_players_in_play(client):
    r = client.post("/api/score", data={"castle": json.dumps(SMALL_CASTLE), "players": ["red", "green"]},
                    content_type="multipart/form-data")
    assert r.status_code == 201
    players = r.get_json()["players"]
    assert players["green"]["score"] == 0 and players["red"]["score"] == 12


def test_score_without_storing_is_not_stored(client, store):
    r = client.post("/api/score?store=0", json=SMALL_CASTLE)
    assert r.status_code == 200 and "id" not in r.get_json()
    assert r.get_json()["players"]["red"]["score"] == 12
    assert store.count() == 0


@pytest.mark.parametrize("castle, needle", [
    (castle_copy(walls=[{"from": [0, 0], "to": [1, 1]}]), "wall"),
    (castle_copy(towers=[[0.5, 0]]), "tower"),
    (castle_copy(keeps=[{"colour": "purple", "at": [0.5, 0.5]}]), "purple"),
    ([1, 2, 3], "JSON object"),
])
def test_an_invalid_castle_is_a_400_naming_the_problem(client, store, castle, needle):
    r = client.post("/api/score", json=castle)
    assert r.status_code == 400
    assert needle.lower() in r.get_json()["error"].lower()
    assert store.count() == 0


def test_body_that_is_not_json_or_form(client, store):
    r = client.post("/api/score", data=b"{not json", content_type="application/json")
    assert r.status_code == 400 and "JSON" in r.get_json()["error"]
    r = client.post("/api/score", data=b"hello", content_type="text/plain")
    assert r.status_code == 415 and "photo" in r.get_json()["error"]
    assert store.count() == 0


def test_unknown_player_colour_is_refused(client, store):
    r = client.post("/api/score", data={"castle": json.dumps(SMALL_CASTLE), "players": "purple"},
                    content_type="multipart/form-data")
    assert r.status_code == 400 and "purple" in r.get_json()["error"]
    assert store.count() == 0


# --- bad photo uploads ------------------------------------------------------------------------

@pytest.mark.parametrize("data, needle", [
    (b"", "empty"),
    (b"%PDF-1.4 this is a document, not a photo", "not a photo"),
    (b"GIF89a" + b"\0" * 100, "not a photo"),
    (jpeg_bytes()[:300], "cut off"),
    (png_bytes()[:-40], "cut off"),
])
def test_bad_photo_uploads_are_400_with_a_clear_message_and_store_nothing(client, store, data, needle):
    before = stored_counts(store)
    r = post_photo(client, data)
    assert r.status_code == 400
    assert needle in r.get_json()["error"]
    assert stored_counts(store) == before


def test_a_photo_over_the_limit_is_413(tmp_path):
    from webapp import create_app

    app = create_app({"DATABASE": str(tmp_path / "db.sqlite3"), "MAX_PHOTO_BYTES": 20_000})
    store = app.extensions["castellan_storage"]
    big = jpeg_bytes((400, 300)) + b"\0" * 20_000
    r = post_photo(app.test_client(), big)
    assert r.status_code == 413
    assert "limit" in r.get_json()["error"]
    assert store.count() == 0


def test_the_default_limit_is_50_mb(client, store):
    assert DEFAULT_MAX_PHOTO_BYTES == 50 * 1024 * 1024
    r = post_photo(client, b"\xff\xd8\xff" + b"\0" * DEFAULT_MAX_PHOTO_BYTES)
    assert r.status_code == 413 and "50 MB" in r.get_json()["error"]
    # A request body far beyond any photo is cut off by the server before it is parsed.
    r = client.post("/api/score", data=b"x" * (110 * 1024 * 1024), content_type="multipart/form-data; boundary=x")
    assert r.status_code == 413 and "error" in r.get_json()
    assert store.count() == 0


def test_wrong_form_field_names_the_expected_one(client, store):
    r = post_photo(client, jpeg_bytes(), field="image")
    assert r.status_code == 400
    error = r.get_json()["error"]
    assert "'photo'" in error and "image" in error
    r = client.post("/api/score", data={}, content_type="multipart/form-data")
    assert r.status_code == 400 and "'photo'" in r.get_json()["error"]
    assert store.count() == 0


def _noise_jpeg() -> bytes:
    import numpy as np
    from PIL import Image

    noise = (np.random.default_rng(1).random((240, 320, 3)) * 255).astype("uint8")
    buf = io.BytesIO()
    Image.fromarray(noise).save(buf, "JPEG")
    return buf.getvalue()


def test_a_photo_without_a_castle_is_refused_with_advice_and_stored(client, store):
    pytest.importorskip("vision", reason="the photo reader (vision) is not installed")
    photo = _noise_jpeg()
    r = post_photo(client, photo, players="red,blue")
    body = r.get_json()
    assert r.status_code == 422, body  # noise holds no castle: a refusal that says what to do
    assert body["refusal"] and body["error"] == body["refusal"]
    assert body["url"].endswith(body["id"])
    assert client.get(body["images"]["photo"]).data == photo
    stored = client.get(f"/api/adjudications/{body['id']}").get_json()
    assert stored["reading"]["players"] == ["red", "blue"]
    assert store.count() == 1


def _toy_photos(views=((70, 120), (55, 30))) -> list[bytes]:
    from tests.vision.toyscene import SMALL_CASTLE as PHOTO_CASTLE
    from tests.vision.toyscene import toy_photo

    return [toy_photo(PHOTO_CASTLE, e, a) for e, a in views]


def test_photos_of_one_castle_from_two_sides_are_read_together_and_all_stored(client, store):
    pytest.importorskip("vision", reason="the photo reader (vision) is not installed")
    from scoring import parse_castle, score_castle
    from tests.vision.toyscene import SMALL_CASTLE as PHOTO_CASTLE

    photos = _toy_photos()
    r = client.post("/api/score", data={"photo": [(io.BytesIO(p), f"side{n}.jpg") for n, p in enumerate(photos, 1)],
                                        "players": "red,blue"}, content_type="multipart/form-data")
    body = r.get_json()
    assert r.status_code == 201, body.get("error")
    expected = {c: v["score"] for c, v in score_castle(parse_castle(PHOTO_CASTLE)).to_json()["players"].items()}
    assert {c: v["score"] for c, v in body["players"].items()} == expected
    assert [p["photo"] for p in body["reading"]["rectification"]["photos"]] == [1, 2]
    assert client.get(body["images"]["photo"]).data == photos[0]
    assert client.get(body["images"]["photo_2"]).data == photos[1]
    page = client.get(f"/a/{body['id']}").get_data(as_text=True)
    assert "2 photos of one castle read together" in page


def test_too_many_photos_or_a_bad_one_among_them_is_400_naming_it(client, store):
    good = jpeg_bytes()
    r = client.post("/api/score", data={"photo": [(io.BytesIO(good), f"p{n}.jpg") for n in range(5)]},
                    content_type="multipart/form-data")
    assert r.status_code == 400 and "at most 4" in r.get_json()["error"]
    r = client.post("/api/score", data={"photo": [(io.BytesIO(good), "a.jpg"), (io.BytesIO(b"milk, eggs"), "list.jpg")]},
                    content_type="multipart/form-data")
    assert r.status_code == 400 and "photo 2 (list.jpg)" in r.get_json()["error"]
    assert stored_counts(store) == (0, 0)


def test_a_photo_added_to_a_refused_result_is_read_with_its_photo_into_a_new_result(client, store):
    pytest.importorskip("vision", reason="the photo reader (vision) is not installed")
    from scoring import parse_castle, score_castle
    from tests.vision.toyscene import SMALL_CASTLE as PHOTO_CASTLE

    first = _noise_jpeg()  # a photo that shows no castle: refused
    refused = post_photo(client, first, players="red,blue").get_json()
    assert refused["refusal"]
    before = client.get(f"/api/adjudications/{refused['id']}").get_json()
    second = _toy_photos(views=((70, 120),))[0]
    r = client.post(f"/api/adjudications/{refused['id']}/photos", data={"photo": (io.BytesIO(second), "higher.jpg")},
                    content_type="multipart/form-data")
    body = r.get_json()
    assert r.status_code == 201, body.get("error")
    assert body["id"] != refused["id"] and body["reading"]["photos_added_to"] == refused["id"]
    expected = {c: v["score"] for c, v in score_castle(parse_castle(PHOTO_CASTLE)).to_json()["players"].items()}
    assert {c: v["score"] for c, v in body["players"].items()} == expected
    assert body["reading"]["players"] == ["red", "blue"]  # the colours chosen with the first photo
    assert client.get(body["images"]["photo"]).data == first and client.get(body["images"]["photo_2"]).data == second
    # The refused result is kept as it was, and the new one links back to it.
    assert client.get(f"/api/adjudications/{refused['id']}").get_json() == before
    page = client.get(f"/a/{body['id']}").get_data(as_text=True)
    assert "2 photos of one castle read together" in page and f'href="/a/{refused["id"]}"' in page
    assert store.count() == 2


def test_adding_photos_to_a_result_that_cannot_take_them_is_refused_and_stores_nothing(client, store):
    from webapp.storage import Image

    def add(adj_id, *files):
        data = {"photo": [(io.BytesIO(d), name) for d, name in files]} if files else {}
        return client.post(f"/api/adjudications/{adj_id}/photos", data=data, content_type="multipart/form-data")

    good = jpeg_bytes()
    photo_result = store.create(kind="score", castle_read=None, castle_corrected=None, result=None,
                                reading={"refusal": "too dark", "players": []}, images=[Image("photo", "image/jpeg", good)])
    typed = client.post("/api/score", json=SMALL_CASTLE).get_json()
    counts = stored_counts(store)
    cases = [
        (add("nope", (good, "a.jpg")), 404, "no adjudication 'nope'"),
        (add(typed["id"], (good, "a.jpg")), 409, "no photo to add to"),
        (add(photo_result.id), 400, "choose a photo of the same castle"),
        (add(photo_result.id, *[(good, f"p{n}.jpg") for n in range(4)]), 400, "this result already has 1"),
        (add(photo_result.id, (good, "a.jpg"), (b"milk, eggs", "list.jpg")), 400, "photo 3 (list.jpg)"),
        (client.post(f"/api/adjudications/{photo_result.id}/photos", json={}), 415, "multipart/form-data"),
    ]
    for r, status, needle in cases:
        assert r.status_code == status and needle in r.get_json()["error"], (status, r.get_json())
    ruled = store.create(kind="score", castle_read=SMALL_CASTLE, castle_corrected=None, result={"players": {}},
                         reading={"players": []}, images=[Image("photo", "image/jpeg", good)])
    store.mark_ruling(ruled.id, None)
    r = add(ruled.id, (good, "a.jpg"))
    assert r.status_code == 409 and "ruling" in r.get_json()["error"]
    assert stored_counts(store) == (counts[0] + 1, counts[1] + 1)  # only the ruled result made here


# --- move checks ------------------------------------------------------------------------------

def _before_after():
    before = castle_copy(keeps=[], walls=SMALL_CASTLE["walls"][:-1])
    return before, SMALL_CASTLE


def test_check_move_json(client, store):
    before, after = _before_after()
    r = client.post("/api/check-move", json={"before": before, "after": after, "player": "red"})
    assert r.status_code == 201
    body = r.get_json()
    # Red closes the courtyard and claims it with a Double Keep in the same turn: legal (C2, C5).
    assert body["player"] == "red" and body["legal"] is True and body["findings"] == []
    assert [sorted([w["from"], w["to"]]) for w in body["added"]["walls"]] == [[[2, 0], [2, 1]]]
    assert len(body["added"]["keeps"]) == 1
    stored = client.get(f"/api/adjudications/{body['id']}").get_json()
    assert stored["kind"] == "move" and stored["player"] == "red"
    assert stored["result"]["legal"] == body["legal"]
    assert stored["after_score"]["players"]["red"]["score"] == 12  # the castle after the turn, scored


def test_check_move_by_stored_ids_and_multipart_files(client):
    before, after = _before_after()
    a = client.post("/api/score", json=before).get_json()
    b = client.post("/api/score", json=after).get_json()
    r = client.post("/api/check-move", json={"before": a["id"], "after": b["url"], "player": "red"})
    assert r.status_code == 201 and len(r.get_json()["added"]["keeps"]) == 1
    r = client.post("/api/check-move", content_type="multipart/form-data", data={
        "before": (io.BytesIO(json.dumps(before).encode()), "before.json"),
        "after": (io.BytesIO(json.dumps(after).encode()), "after.json"),
        "player": "red"})
    assert r.status_code == 201 and len(r.get_json()["added"]["keeps"]) == 1


@pytest.mark.parametrize("body, needle", [
    ({"before": SMALL_CASTLE, "after": SMALL_CASTLE}, "player"),
    ({"before": SMALL_CASTLE, "after": SMALL_CASTLE, "player": "pink"}, "player"),
    ({"before": SMALL_CASTLE, "player": "red"}, "after"),
    ({"before": "nope", "after": SMALL_CASTLE, "player": "red"}, "before"),
    ({"before": castle_copy(towers=[["a", 0]]), "after": SMALL_CASTLE, "player": "red"}, "castellan/1"),
])
def test_check_move_bad_input(client, store, body, needle):
    r = client.post("/api/check-move", json=body)
    assert r.status_code == 400
    assert needle in r.get_json()["error"]
    assert store.count() == 0


def test_check_move_with_a_bad_photo_stores_nothing(client, store):
    r = client.post("/api/check-move", content_type="multipart/form-data", data={
        "before": (io.BytesIO(b"not an image at all"), "before.jpg"),
        "after": (io.BytesIO(json.dumps(SMALL_CASTLE).encode()), "after.json"), "player": "red"})
    assert r.status_code == 400 and "before" in r.get_json()["error"]
    assert stored_counts(store) == (0, 0)


# --- adjudications, corrections, rulings ---------------------------------------------------------

def test_unknown_adjudication_is_404_json(client):
    r = client.get("/api/adjudications/doesnotexist")
    assert r.status_code == 404 and "error" in r.get_json()


def test_wrong_method_is_a_json_405(client):
    r = client.get("/api/score")
    assert r.status_code == 405 and "error" in r.get_json()


def _open_square() -> dict:
    return castle_copy(walls=SMALL_CASTLE["walls"][:-1])  # the right-hand wall is missing


def test_correction_with_the_edit_token_rescoring_and_storing(app, client):
    created = client.post("/api/score", json=_open_square()).get_json()
    assert created["players"].get("red", {"score": 0})["score"] == 0
    other = app.test_client()  # another browser: no cookie, no token
    r = other.put(f"/api/adjudications/{created['id']}/castle", json=SMALL_CASTLE)
    assert r.status_code == 403 and "error" in r.get_json()
    r = other.put(f"/api/adjudications/{created['id']}/castle", json=SMALL_CASTLE,
                  headers={"X-Edit-Token": created["edit_token"]})
    assert r.status_code == 200
    body = r.get_json()
    assert body["result"]["players"]["red"]["score"] == 12
    assert body["castle_corrected"]["walls"] == SMALL_CASTLE["walls"]
    assert body["castle_read"]["walls"] == _open_square()["walls"]
    assert client.get(f"/api/adjudications/{created['id']}").get_json()["result"]["players"]["red"]["score"] == 12


def test_invalid_correction_keeps_the_stored_result(client):
    created = client.post("/api/score", json=SMALL_CASTLE).get_json()
    r = client.put(f"/api/adjudications/{created['id']}/castle", json=castle_copy(towers=[[0, 0.5]]),
                   headers={"X-Edit-Token": created["edit_token"]})
    assert r.status_code == 400
    stored = client.get(f"/api/adjudications/{created['id']}").get_json()
    assert stored["castle_corrected"] is None and stored["result"]["players"]["red"]["score"] == 12


def test_only_the_judge_key_marks_a_ruling_and_a_ruling_is_locked(app, client):
    created = client.post("/api/score", json=SMALL_CASTLE).get_json()
    url = f"/api/adjudications/{created['id']}/ruling"
    assert client.post(url).status_code == 403
    assert client.post(url, headers={"X-Judge-Key": "guess"}).status_code == 403
    r = client.post(url, json={"judge_key": JUDGE_KEY, "note": "confirmed"})
    assert r.status_code == 200 and r.get_json()["ruling"] is True and r.get_json()["ruling_note"] == "confirmed"
    # A ruling is final: neither its uploader nor a judge can change it afterwards.
    r = client.put(f"/api/adjudications/{created['id']}/castle", json=_open_square(),
                   headers={"X-Edit-Token": created["edit_token"]})
    assert r.status_code == 409
    r = client.put(f"/api/adjudications/{created['id']}/castle", json=_open_square(),
                   headers={"X-Judge-Key": JUDGE_KEY})
    assert r.status_code == 409
    assert app.test_client().get(f"/api/adjudications/{created['id']}").get_json()["ruling"] is True


def test_without_a_configured_judge_key_nobody_rules(tmp_path):
    from webapp import create_app

    app = create_app({"DATABASE": str(tmp_path / "db.sqlite3")})
    client = app.test_client()
    created = client.post("/api/score", json=SMALL_CASTLE).get_json()
    r = client.post(f"/api/adjudications/{created['id']}/ruling", headers={"X-Judge-Key": ""})
    assert r.status_code == 403 and "no judge key" in r.get_json()["error"]


def test_move_checks_cannot_be_corrected(client):
    before, after = _before_after()
    move = client.post("/api/check-move", json={"before": before, "after": after, "player": "red"}).get_json()
    r = client.put(f"/api/adjudications/{move['id']}/castle", json=SMALL_CASTLE)
    assert r.status_code == 409


def test_rules_api_has_the_rule_texts(client):
    rules = client.get("/api/rules").get_json()
    assert rules["C7"]["text"].startswith("Chivalry")
    assert {"G1", "T3", "S2", "C5"} <= set(rules)


def test_oversized_castles_are_refused(client, store):
    towers = [[x, y] for x in range(50) for y in range(50)]
    r = client.post("/api/score", json=castle_copy(towers=towers))
    assert r.status_code == 400 and "pieces" in r.get_json()["error"]
    r = client.post("/api/score", data=b"{" + b" " * (5 * 1024 * 1024) + b"}", content_type="application/json")
    assert r.status_code == 413 and "JSON body" in r.get_json()["error"]
    assert store.count() == 0


def test_check_move_with_an_unreadable_photo_state_explains_and_stores_nothing(client, store):
    pytest.importorskip("vision", reason="the photo reader (vision) is not installed")
    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray((np.random.default_rng(4).random((240, 320, 3)) * 255).astype("uint8")).save(buf, "JPEG")
    r = client.post("/api/check-move", content_type="multipart/form-data", data={
        "before": (io.BytesIO(buf.getvalue()), "before.jpg"),
        "after": (io.BytesIO(json.dumps(SMALL_CASTLE).encode()), "after.json"), "player": "red"})
    body = r.get_json()
    assert r.status_code == 422, body  # noise holds no castle: the reader refuses and says what to do
    assert "before photo could not be read" in body["error"] and body["refusal"]
    assert stored_counts(store) == (0, 0)


def test_configuration_from_the_environment(tmp_path, monkeypatch):
    from webapp import create_app

    monkeypatch.setenv("CASTELLAN_DATABASE", str(tmp_path / "env.sqlite3"))
    monkeypatch.setenv("CASTELLAN_JUDGE_KEY", "123456")  # looks like a number: still a key
    app = create_app()
    client = app.test_client()
    created = client.post("/api/score", json=SMALL_CASTLE).get_json()
    assert (tmp_path / "env.sqlite3").exists()
    r = client.post(f"/api/adjudications/{created['id']}/ruling", headers={"X-Judge-Key": "123456"})
    assert r.status_code == 200 and r.get_json()["ruling"] is True
