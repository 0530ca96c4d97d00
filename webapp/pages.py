"""The pages people use on their phones: upload, result (with corrections), judge mode."""
from __future__ import annotations

from flask import (Blueprint, Response, abort, current_app, jsonify, redirect, render_template,
                   request, url_for)

from . import engine, service
from .api import MAX_JSON_BYTES
from .engine import COLOURS
from .rules import RULES, SOURCE, rule_text
from .service import RequestProblem
from .uploads import MAX_PHOTOS, MB

bp = Blueprint("pages", __name__)


@bp.app_context_processor
def helpers():
    return {"rule_text": rule_text, "group_findings": group_findings, "COLOURS": COLOURS,
            "max_photo_mb": current_app.config["MAX_PHOTO_BYTES"] // MB, "max_photos": MAX_PHOTOS}


@bp.app_template_filter("sentence")
def sentence(text: str | None) -> str:
    """Advice from the reader as a sentence: first letter upper-case, a full stop at the end."""
    text = (text or "").strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


SEVERITY_ORDER = {"violation": 0, "warning": 1, "notice": 2}


def group_findings(findings: list[dict]) -> list[dict]:
    """Findings grouped by rule (worst severity first), so a rule's text is shown once."""
    groups: dict[tuple[str, str], dict] = {}
    for f in findings:
        rule, severity = str(f.get("rule", "")), str(f.get("severity", "notice"))
        groups.setdefault((rule, severity), {"rule": rule, "severity": severity, "items": []})["items"].append(f)
    return sorted(groups.values(), key=lambda g: (SEVERITY_ORDER.get(g["severity"], 3), g["rule"]))


@bp.get("/")
def upload():
    return render_template("upload.html")


@bp.post("/")
def upload_post():
    """The upload form without JavaScript: a photo (or a castle) in, a redirect to its result out."""
    try:
        players = service.parse_players(request.form.getlist("players"))
        photos = service.read_photo_uploads(service.chosen_photos(request.files))  # read together
        castle_text = request.form.get("castle", "").strip()
        if photos:
            outcome = service.score_photo(photos, players, store_refusal_without_reader=True)
        elif castle_text:
            outcome = service.score_typed_castle(service.load_castle_text(castle_text), players)
        else:
            raise RequestProblem(400, "Choose a photo (or take one) before pressing Score.")
    except RequestProblem as exc:
        return render_template("upload.html", error=exc.message), exc.status
    return redirect(url_for("pages.result", adj_id=outcome.adjudication.id), code=303)


@bp.get("/draw")
def draw():
    """An empty lattice to enter a castle by hand (when there is no usable photo)."""
    return render_template("draw.html", players=request.args.getlist("players"))


@bp.post("/preview")
def preview():
    """Score a castle without storing it: the correction editor's live score, rendered as HTML."""
    if (request.content_length or 0) > MAX_JSON_BYTES:
        return jsonify({"error": f"the castle is too large to score (over {MAX_JSON_BYTES // MB} MB of JSON)"}), 413
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("castle"), dict):
        return jsonify({"error": "send {\"castle\": castellan/1}"}), 400
    players = body.get("players") or []
    try:
        players = service.parse_players([",".join(map(str, players))] if isinstance(players, list) else [])
        castle = engine.with_players(body["castle"], players)
        result = service.score_castle(castle)
    except RequestProblem as exc:
        return jsonify({"error": exc.message}), exc.status
    return jsonify({"result": result, "html": render_template("_score.html", result=result),
                    "findings_html": render_template("_findings.html", findings=result.get("findings", []))})


def _adjudication_or_404(adj_id: str):
    adj = service.storage().get(adj_id)
    if adj is None:
        abort(404)
    return adj


@bp.get("/a/<adj_id>")
def result(adj_id: str):
    adj = _adjudication_or_404(adj_id)
    token = request.args.get("edit")
    if token is not None:
        # The API's edit_url: whoever holds the edit token may correct this in their browser too.
        if service.can_edit(adj, token, None):
            service.remember_ownership(adj)
        return redirect(url_for("pages.result", adj_id=adj.id), code=303)
    return _result_page(adj)


def _result_page(adj, add_photo_error: str | None = None, status: int = 200):
    share_url = url_for("pages.result", adj_id=adj.id, _external=True)
    if adj.kind == "move":
        return render_template("move.html", adj=adj, share_url=share_url)
    editable = service.can_edit(adj, None, None)
    players = (adj.reading or {}).get("players") or []
    guess, doubted = service.unsure_guess(adj) or (None, None)
    # A score the reader gave, as it read it, may be checked with another photo (a judge asked about a
    # placement takes one from the other side); a castle corrected or entered by hand is no longer the
    # photos' reading, and reading them again would set the corrections aside.
    room_for_photos = service.room_for_photos(adj)
    check_with_photo = (adj.result is not None and adj.castle_read is not None and not adj.castle_corrected
                        and room_for_photos > 0)
    refusal = (adj.reading or {}).get("refusal") if adj.result is None else None
    return render_template("result.html", adj=adj, result=adj.result, share_url=share_url,
                           editable=editable, players=players, guess=guess, highlight=doubted, refusal=refusal,
                           more_photos=service.photo_roles(adj)[1:], room_for_photos=room_for_photos,
                           check_with_photo=check_with_photo, add_photo_error=add_photo_error,
                           photo_form=bool(refusal and room_for_photos) or check_with_photo), status


@bp.post("/a/<adj_id>/photos")
def add_photos(adj_id: str):
    """Another photo of the castle, read together with this result's photos (the result page's form
    without JavaScript): a redirect to the new result."""
    adj = _adjudication_or_404(adj_id)
    try:
        outcome = service.add_photos(adj, service.chosen_photos(request.files), store_refusal_without_reader=True)
    except RequestProblem as exc:
        return _result_page(adj, exc.message, exc.status)
    return redirect(url_for("pages.result", adj_id=outcome.adjudication.id), code=303)


@bp.get("/a/<adj_id>/image/<role>")
def image(adj_id: str, role: str):
    found = service.storage().image(adj_id, role)
    if found is None:
        abort(404)
    data, mimetype = found.data, found.content_type
    if mimetype == "image/heic" and request.args.get("original") != "1":
        # Most browsers cannot show HEIC: show a JPEG of it (?original=1 gives the file as sent).
        data, mimetype = _heic_as_jpeg(data), "image/jpeg"
    response = Response(data, mimetype=mimetype)
    response.headers["Cache-Control"] = "public, max-age=86400, immutable"
    return response


def _heic_as_jpeg(data: bytes) -> bytes:
    import io

    import pillow_heif
    from PIL import Image, ImageOps

    pillow_heif.register_heif_opener()
    with Image.open(io.BytesIO(data)) as img:
        img = ImageOps.exif_transpose(img).convert("RGB")
        img.thumbnail((2048, 2048))
        out = io.BytesIO()
        img.save(out, "JPEG", quality=85)
    return out.getvalue()


@bp.post("/a/<adj_id>/ruling")
def ruling(adj_id: str):
    adj = _adjudication_or_404(adj_id)
    service.mark_ruling(adj, request.form.get("judge_key"), request.form.get("note"))
    return redirect(url_for("pages.result", adj_id=adj.id), code=303)


def _judge_page(error: str | None = None, status: int = 200):
    """The judge form, offering the recent stored castles as states."""
    recent = service.storage().recent(limit=30, kind="score")
    return render_template("judge.html", error=error,
                           recent=[a for a in recent if a.castle is not None]), status


@bp.get("/judge")
def judge():
    return _judge_page()


@bp.post("/judge")
def judge_post():
    images: list = []
    try:
        states = {}
        for name in ("before", "after"):
            text = request.form.get(f"{name}_text", "").strip() or request.form.get(f"{name}_stored", "").strip()
            states[name] = service.resolve_state(name, file=request.files.get(name), text=text, images=images)
        outcome = service.check_move(states["before"], states["after"], request.form.get("player", ""), images)
    except RequestProblem as exc:
        return _judge_page(exc.message, exc.status)
    return redirect(url_for("pages.result", adj_id=outcome.adjudication.id), code=303)


@bp.get("/rules")
def rules():
    return render_template("rules.html", rules=RULES, source=SOURCE)
