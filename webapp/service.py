"""What the API and the pages both do: read an upload, score or check it, store the adjudication.

Everything is computed first and stored last, in one transaction, so a request that fails at any
step stores nothing.
"""
from __future__ import annotations

import hmac
import json
import re
from dataclasses import dataclass, field
from typing import Any

from flask import current_app, session, url_for
from werkzeug.datastructures import FileStorage, MultiDict

from . import engine
from .engine import COLOURS, BadCastle, BadPhoto, EngineUnavailable
from .storage import Adjudication, Image
from .uploads import MAX_PHOTOS, check_photo, sniff


class RequestProblem(Exception):
    """A request the app cannot fulfil: `status` (4xx/5xx) and a message for the user."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


@dataclass
class Outcome:
    adjudication: Adjudication
    refused: bool = False
    extra: dict = field(default_factory=dict)


def storage():
    return current_app.extensions["castellan_storage"]


def parse_players(values: list[str]) -> list[str]:
    """Player colours from form values ("red", "red,blue" or several fields)."""
    players: list[str] = []
    for value in values:
        for part in re.split(r"[,\s]+", value.strip().lower()):
            if not part:
                continue
            if part not in COLOURS:
                raise RequestProblem(400, f"unknown player colour {part!r}: use {', '.join(COLOURS)}")
            if part not in players:
                players.append(part)
    return players


def load_castle_text(text: str, what: str = "castle") -> dict:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestProblem(400, f"the {what} is not valid JSON ({exc}); send a castellan/1 object")
    if not isinstance(value, dict):
        raise RequestProblem(400, f"the {what} must be a JSON object in the castellan/1 format")
    return value


def read_upload(file: FileStorage, what: str = "photo") -> bytes:
    data = file.read()
    limit = current_app.config["MAX_PHOTO_BYTES"]
    try:
        check_photo(data, max_bytes=limit)
    except BadPhoto as exc:
        raise RequestProblem(exc.status, f"{what}: {exc}" if what != "photo" else str(exc))
    return data


def chosen_photos(files: MultiDict) -> list[FileStorage]:
    """The files chosen in a form's `photo` fields: a form may send the field more than once (camera and
    file inputs, several photos of one castle), and an input left empty as a file with no name."""
    return [f for f in files.getlist("photo") if f.filename]


def read_photo_uploads(files: list[FileStorage], *, already: int = 0) -> list[bytes]:
    """The photos of one castle sent in `photo` fields (the camera's and the gallery's, which may hold
    several), each checked like read_upload and, when there are several, named in its error. `already`:
    how many photos of the castle are stored (photos added to a result are numbered after them)."""
    if already + len(files) > MAX_PHOTOS:
        raise RequestProblem(400, f"{len(files)} photos were sent; send at most {MAX_PHOTOS - already} photos of one castle"
                                  + (f" (this result already has {already}, and at most {MAX_PHOTOS} are read together)"
                                     if already else ""))
    if len(files) == 1 and not already:
        return [read_upload(files[0])]
    return [read_upload(f, f"photo {n} ({f.filename})") for n, f in enumerate(files, already + 1)]


def photo_role(number: int) -> str:
    """The storage role of a castle's `number`th photo (1: "photo", then "photo_2", ...)."""
    return "photo" if number == 1 else f"photo_{number}"


def photo_roles(adj: Adjudication) -> list[str]:
    """The storage roles of the photos of one castle stored with a result, in the order they were read."""
    return [photo_role(n) for n in range(1, MAX_PHOTOS + 1) if photo_role(n) in adj.image_roles]


def stored_photos(adj: Adjudication) -> list[bytes]:
    """The photos of one castle stored with a photo's result, in the order they were read."""
    return [storage().image(adj.id, role).data for role in photo_roles(adj)]


def room_for_photos(adj: Adjudication) -> int:
    """How many more photos of the castle may be added to this result (0 when none may: not a photo's
    result, a judge's ruling, or MAX_PHOTOS already)."""
    if adj.kind != "score" or adj.ruling or "photo" not in adj.image_roles:
        return 0
    return MAX_PHOTOS - len(photo_roles(adj))


def add_photos(adj: Adjudication, files: list[FileStorage], *, store_refusal_without_reader: bool) -> Outcome:
    """Read a result's photos again together with more photos of the same castle (a player refused takes
    another from higher up): a new result, which links back to this one; this one stays as it was."""
    if adj.kind != "score" or "photo" not in adj.image_roles:
        raise RequestProblem(409, "this result has no photo to add to: upload the photos together on the start page")
    if adj.ruling:
        raise RequestProblem(409, "this result is a judge's ruling, which is final: upload new photos on the start page")
    if not files:
        raise RequestProblem(400, "choose a photo of the same castle (or take one) to read with this result's photos")
    earlier = stored_photos(adj)
    added = read_photo_uploads(files, already=len(earlier))
    players = (adj.reading or {}).get("players") or []
    return score_photo(earlier + added, players, store_refusal_without_reader=store_refusal_without_reader,
                       added_to=adj.id)


# Two boxes hold 176 grey pieces and 40 keeps; anything far beyond is not a game of Castellan and
# would only tie up the server.
MAX_PIECES = 2000


def check_size(castle: dict, what: str = "castle") -> None:
    total = 0
    for key in ("towers", "walls", "keeps"):
        value = castle.get(key)
        if isinstance(value, list):
            total += len(value)
    if total > MAX_PIECES:
        raise RequestProblem(400, f"the {what} has {total} pieces; a game of Castellan has a few hundred "
                                  f"at most (limit {MAX_PIECES})")


def score_castle(castle: dict) -> dict:
    check_size(castle)
    try:
        return engine.score(castle)
    except BadCastle as exc:
        raise RequestProblem(400, f"the castle is not valid castellan/1: {exc}")
    except EngineUnavailable as exc:
        raise RequestProblem(503, str(exc))


def remember_ownership(adj: Adjudication) -> None:
    """Let this browser correct what it created (the API returns an edit token instead)."""
    owned = [i for i in session.get("owned", []) if i != adj.id]
    session["owned"] = (owned + [adj.id])[-50:]


def can_edit(adj: Adjudication, edit_token: str | None, judge_key: str | None) -> bool:
    if adj.kind != "score" or adj.ruling:  # a ruling is final, for judges too
        return False
    if is_judge(judge_key):
        return True
    if edit_token and hmac.compare_digest(edit_token, adj.edit_token):
        return True
    return adj.id in session.get("owned", [])


def is_judge(key: str | None) -> bool:
    configured = current_app.config.get("JUDGE_KEY")
    return bool(configured and key and hmac.compare_digest(str(key), str(configured)))


def score_photo(photos: list[bytes], players: list[str], *, store_refusal_without_reader: bool,
                added_to: str | None = None) -> Outcome:
    """Read and score the photos of one castle that passed read_photo_uploads (several are read together),
    and store the adjudication (a refusal too, so that the user can enter or correct the castle on its page).
    `added_to`: the earlier result whose photos these include (add_photos)."""
    try:
        reading = engine.read_photo(photos, current_app.extensions.get("castellan_profile"))
    except BadPhoto as exc:
        raise RequestProblem(400, str(exc))
    except EngineUnavailable as exc:
        if not store_refusal_without_reader:
            raise RequestProblem(503, str(exc))
        reading = engine.Reading(
            castle=None, confidence=None, overlay_jpeg=None, info={},
            refusal="The photo reader is not available on this server right now. "
                    "Draw the castle on the lattice below to score it.")
    result = None
    castle = None
    if reading.castle is not None:
        castle = engine.with_players(reading.castle, players)
        try:
            result = engine.score(castle)
        except BadCastle as exc:
            # The reader produced something the rules engine rejects: show it as a refusal the
            # user can fix on the drawing, not as the user's fault.
            reading.refusal = (f"The castle read from the photo is not consistent ({exc}). "
                               "Correct it on the drawing below, or take the photo again.")
        except EngineUnavailable as exc:
            raise RequestProblem(503, str(exc))
    info = dict(reading.info)
    info["refusal"] = reading.refusal if result is None else info.get("refusal")
    info["confidence"] = reading.confidence
    info["players"] = players
    if added_to:
        info["photos_added_to"] = added_to
    images = [Image(photo_role(n), sniff(p) or "application/octet-stream", p) for n, p in enumerate(photos, 1)]
    if reading.overlay_jpeg:
        images.append(Image("overlay", "image/jpeg", reading.overlay_jpeg))
    adj = storage().create(kind="score", castle_read=castle, castle_corrected=None, result=result,
                           reading=info, images=images)
    remember_ownership(adj)
    return Outcome(adj, refused=result is None)


def unsure_guess(adj: Adjudication) -> tuple[dict, dict] | None:
    """For a refused photo nobody has corrected yet: the castle the reader made of it anyway, and the
    pieces it asks to check (marked `check`, its `towers_to_check`, and the wall steps and towers it barely
    saw absent), to be checked and saved by the player. None when there is no such guess. (Read here from the
    stored JSON, not through vision.pipeline, so the app serves stored results without the reader;
    vision.pipeline.pieces_to_check counts the same marks for the command line.)"""
    guess = (adj.reading or {}).get("tentative_castle")
    if adj.castle is not None or not isinstance(guess, dict):
        return None
    doubted = {"towers": guess.get("towers_to_check") or [],
               "walls": [w for w in guess.get("walls", []) if w.get("check")],
               "keeps": [k for k in guess.get("keeps", []) if k.get("check")],
               "absent_walls": guess.get("unsure_absent_walls") or [],
               "absent_towers": guess.get("unsure_absent_towers") or []}
    return guess, doubted


def score_typed_castle(castle: dict, players: list[str]) -> Outcome:
    castle = engine.with_players(castle, players)
    result = score_castle(castle)
    adj = storage().create(kind="score", castle_read=castle, castle_corrected=None, result=result,
                           reading={"source": "castellan/1", "players": players})
    remember_ownership(adj)
    return Outcome(adj)


def correct(adj: Adjudication, castle: dict) -> Adjudication:
    players = (adj.reading or {}).get("players") or []
    castle = engine.with_players(castle, players)
    result = score_castle(castle)
    try:
        return storage().correct(adj.id, castle, result)
    except KeyError:
        raise RequestProblem(409, "this result has been marked as a ruling and can no longer be corrected")


def mark_ruling(adj: Adjudication, judge_key: str | None, note: Any) -> Adjudication:
    """Mark a result as a judge's ruling (the API and the result page both come here)."""
    if not current_app.config.get("JUDGE_KEY"):
        raise RequestProblem(403, "no judge key is configured on this server, so nobody can mark rulings")
    if not is_judge(judge_key):
        raise RequestProblem(403, "only a judge may mark a ruling: the judge key is missing or wrong")
    if adj.result is None:
        raise RequestProblem(409, "there is no score to rule on yet: correct or enter the castle first")
    return storage().mark_ruling(adj.id, str(note or "").strip()[:2000] or None)


_ID_IN_URL = re.compile(r"(?:/a/|/api/adjudications/)([A-Za-z0-9_-]+)/?$")


def resolve_state(name: str, *, file: FileStorage | None, text: str | None,
                  images: list[Image]) -> dict:
    """One state of a move (`before` or `after`): a photo, a castellan/1 JSON file or text, or the
    id or link of a stored adjudication. Photos go into `images`."""
    if file is not None and file.filename:
        head = file.stream.read(16)
        file.stream.seek(0)
        if head.lstrip()[:1] == b"{":
            return load_castle_text(file.read().decode("utf-8", "replace"), f"{name} castle")
        data = read_upload(file, f"the {name} photo")
        try:
            reading = engine.read_photo(data, current_app.extensions.get("castellan_profile"))
        except BadPhoto as exc:
            raise RequestProblem(400, f"the {name} photo: {exc}")
        except EngineUnavailable as exc:
            raise RequestProblem(503, str(exc))
        if reading.castle is None:
            raise RequestProblem(422, f"the {name} photo could not be read: {reading.refusal}",
                                 refusal=reading.refusal, state=name)
        images.append(Image(f"{name}_photo", sniff(data) or "application/octet-stream", data))
        if reading.overlay_jpeg:
            images.append(Image(f"{name}_overlay", "image/jpeg", reading.overlay_jpeg))
        return reading.castle
    if text is not None and text.strip():
        text = text.strip()
        if text.startswith("{"):
            return load_castle_text(text, f"{name} castle")
        match = _ID_IN_URL.search(text)
        ident = match.group(1) if match else text
        stored = storage().get(ident) if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", ident) else None
        if stored is None or stored.castle is None:
            raise RequestProblem(400, f"{name}: no stored castle {text!r}; give a photo, a castellan/1 "
                                      "castle or the link of a stored result")
        return stored.castle
    raise RequestProblem(400, f"missing {name!r}: give a photo, a castellan/1 castle, or the id of a stored result")


def check_move(before: dict, after: dict, player: str, images: list[Image]) -> Outcome:
    check_size(before, "before castle")
    check_size(after, "after castle")
    player = (player or "").strip().lower()
    if player not in COLOURS:
        raise RequestProblem(400, f"'player' must be the colour who moved: one of {', '.join(COLOURS)}")
    try:
        # Each castle is parsed once; the move check and the score after it share the parse.
        parsed_before, parsed_after = engine.parse(before), engine.parse(after)
        verdict = engine.check_move(parsed_before, parsed_after, player)
        after_score = engine.score_parsed(parsed_after)
    except BadCastle as exc:
        raise RequestProblem(400, f"a castle is not valid castellan/1: {exc}")
    except EngineUnavailable as exc:
        raise RequestProblem(503, str(exc))
    extra = {"before": parsed_before.to_json(), "after": parsed_after.to_json(), "player": player,
             "added": verdict.get("added"), "removed": verdict.get("removed"), "after_score": after_score}
    adj = storage().create(kind="move", castle_read=None, castle_corrected=None, result=verdict,
                           reading=None, extra=extra, images=images)
    return Outcome(adj)


def adjudication_json(adj: Adjudication) -> dict:
    """The public view of a stored adjudication (never its edit token)."""
    out: dict[str, Any] = {
        "id": adj.id,
        "kind": adj.kind,
        "url": url_for("pages.result", adj_id=adj.id, _external=True),
        "created_at": adj.created_at,
        "updated_at": adj.updated_at,
        "ruling": adj.ruling,
        "ruled_at": adj.ruled_at,
        "ruling_note": adj.ruling_note,
        "result": adj.result,
    }
    if adj.kind == "score":
        out.update(castle_read=adj.castle_read, castle_corrected=adj.castle_corrected,
                   castle=adj.castle, reading=adj.reading)
    else:
        out.update(adj.extra)
    out["images"] = {role: url_for("pages.image", adj_id=adj.id, role=role, _external=True)
                     for role in adj.image_roles}
    return out
