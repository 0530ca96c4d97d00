"""The JSON API: the same powers as the pages, described by GET /openapi.json."""
from __future__ import annotations

from flask import Blueprint, jsonify, request, url_for

from . import engine, service
from .openapi import openapi_document
from .rules import RULES
from .service import RequestProblem
from .storage import Image
from .uploads import MB

bp = Blueprint("api", __name__)


MAX_JSON_BYTES = 4 * MB  # a castle is a few kB; two castles and slack


def _json_body() -> dict:
    if (request.content_length or 0) > MAX_JSON_BYTES:
        raise RequestProblem(413, f"the JSON body is larger than {MAX_JSON_BYTES // MB} MB; "
                                  "a castellan/1 castle is a few kB")
    value = request.get_json(silent=True)
    if value is None:
        raise RequestProblem(400, "the body is not valid JSON: send a castellan/1 object")
    if not isinstance(value, dict):
        raise RequestProblem(400, "the body must be a JSON object")
    return value


def _is_multipart() -> bool:
    return request.mimetype in ("multipart/form-data", "application/x-www-form-urlencoded")


def _photo_files() -> list:
    """The files sent in `photo` fields (service.chosen_photos), or the one a client sent without a file name."""
    photos = service.chosen_photos(request.files)
    if not photos and request.files.get("photo") is not None:
        photos = [request.files["photo"]]  # a client that sends no file name
    return photos


def _stored_response(outcome: service.Outcome, status: int = 201):
    adj = outcome.adjudication
    body = dict(adj.result or {})
    body.update(id=adj.id, url=url_for("pages.result", adj_id=adj.id, _external=True),
                edit_token=adj.edit_token,
                edit_url=url_for("pages.result", adj_id=adj.id, edit=adj.edit_token, _external=True))
    if adj.reading and adj.reading.get("source") != "castellan/1":
        body["reading"] = adj.reading
    body["images"] = {role: url_for("pages.image", adj_id=adj.id, role=role, _external=True)
                      for role in adj.image_roles}
    if outcome.refused:
        refusal = (adj.reading or {}).get("refusal") or "the castle could not be read from the photo"
        body = {"error": refusal, "refusal": refusal, **body}
        status = 422
    response = jsonify(body)
    response.status_code = status
    response.headers["Location"] = body["url"]
    return response


@bp.get("/openapi.json")
def openapi():
    return jsonify(openapi_document(request.host_url.rstrip("/")))


@bp.get("/api/rules")
def rules():
    return jsonify(RULES)


@bp.post("/api/score")
def score():
    """Score a photo (multipart field `photo`; several photos of one castle, read together, as several
    `photo` fields) or a castellan/1 castle (JSON body or field `castle`).
    `?store=0` scores a castle without storing it (the editor's live score is POST /preview)."""
    store = request.args.get("store", "1").lower() not in ("0", "false", "no")
    if _is_multipart():
        players = service.parse_players(request.form.getlist("players"))
        photos = _photo_files()  # several are read together
        castle_text = request.form.get("castle")
        castle_file = request.files.get("castle")
        if photos:
            data = service.read_photo_uploads(photos)
            return _stored_response(service.score_photo(data, players, store_refusal_without_reader=False))
        if castle_file is not None:
            castle_text = castle_file.read().decode("utf-8", "replace")
        if castle_text is None:
            got = sorted(set(request.files) | set(request.form))
            raise RequestProblem(400, "send the photo in the multipart field 'photo' (or a castellan/1 "
                                      f"castle in the field 'castle'); received fields: {got or 'none'}")
        castle = service.load_castle_text(castle_text)
    elif request.is_json:
        castle = _json_body()
        players = service.parse_players(request.args.getlist("players"))
    else:
        raise RequestProblem(415, "send multipart/form-data with a 'photo' field, or a castellan/1 "
                                  "castle as an application/json body")
    if not store:
        return jsonify(service.score_castle(engine.with_players(castle, players)))
    return _stored_response(service.score_typed_castle(castle, players))


@bp.post("/api/check-move")
def check_move():
    """Check one turn: `before` and `after` (photo, castellan/1 or a stored id) and `player`."""
    images: list[Image] = []
    if _is_multipart():
        states = {}
        for name in ("before", "after"):
            states[name] = service.resolve_state(name, file=request.files.get(name),
                                                 text=request.form.get(name), images=images)
        player = request.form.get("player", "")
    elif request.is_json:
        body = _json_body()
        states = {}
        for name in ("before", "after"):
            value = body.get(name)
            if isinstance(value, dict):
                states[name] = value
            elif isinstance(value, str):
                states[name] = service.resolve_state(name, file=None, text=value, images=images)
            else:
                raise RequestProblem(400, f"missing {name!r}: a castellan/1 object or the id of a stored result")
        player = body.get("player") or ""
        if not isinstance(player, str):
            raise RequestProblem(400, "'player' must be a colour name")
    else:
        raise RequestProblem(415, "send application/json {before, after, player} or multipart/form-data")
    outcome = service.check_move(states["before"], states["after"], player, images)
    adj = outcome.adjudication
    body = dict(adj.result or {})
    body.update(id=adj.id, url=url_for("pages.result", adj_id=adj.id, _external=True),
                added=adj.extra.get("added"))
    response = jsonify(body)
    response.status_code = 201
    response.headers["Location"] = body["url"]
    return response


def _get_or_404(adj_id: str):
    adj = service.storage().get(adj_id)
    if adj is None:
        raise RequestProblem(404, f"no adjudication {adj_id!r}: check the link")
    return adj


@bp.get("/api/adjudications/<adj_id>")
def adjudication(adj_id: str):
    return jsonify(service.adjudication_json(_get_or_404(adj_id)))


@bp.put("/api/adjudications/<adj_id>/castle")
def correct(adj_id: str):
    """Store a corrected castle (needs the edit token, the creating browser, or the judge key)."""
    adj = _get_or_404(adj_id)
    if adj.kind != "score":
        raise RequestProblem(409, "a move check cannot be corrected: check the corrected states as a new move")
    if not request.is_json:
        raise RequestProblem(415, "send the corrected castle as an application/json castellan/1 body")
    castle = _json_body()
    if not service.can_edit(adj, request.headers.get("X-Edit-Token"), request.headers.get("X-Judge-Key")):
        if adj.ruling:
            raise RequestProblem(409, "this result is a judge's ruling and can no longer be corrected")
        raise RequestProblem(403, "only whoever uploaded this (X-Edit-Token) or a judge (X-Judge-Key) "
                                  "may correct it; others can read it")
    updated = service.correct(adj, castle)
    return jsonify(service.adjudication_json(updated))


@bp.post("/api/adjudications/<adj_id>/photos")
def add_photos(adj_id: str):
    """More photos of a stored photo's castle (multipart `photo` fields), read together with its photos:
    a new stored result like POST /api/score's, with `reading.photos_added_to` naming this one."""
    adj = _get_or_404(adj_id)
    if not _is_multipart():
        raise RequestProblem(415, "send the photos as multipart/form-data 'photo' fields")
    return _stored_response(service.add_photos(adj, _photo_files(), store_refusal_without_reader=False))


@bp.post("/api/adjudications/<adj_id>/ruling")
def ruling(adj_id: str):
    """Mark a result as a ruling: only with the judge key (header X-Judge-Key or JSON judge_key)."""
    adj = _get_or_404(adj_id)
    body = request.get_json(silent=True) if request.is_json else None
    body = body if isinstance(body, dict) else {}
    key = request.headers.get("X-Judge-Key") or body.get("judge_key") or request.form.get("judge_key")
    updated = service.mark_ruling(adj, key, body.get("note") or request.form.get("note"))
    return jsonify(service.adjudication_json(updated))
