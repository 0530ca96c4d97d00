"""Castellan Referee's web app: upload a photo on a phone, see the explained score, correct it,
check a turn as a judge, and use the same powers through a JSON API.

    from webapp import create_app
    app = create_app({"DATABASE": "sqlite:///castellan.sqlite3", "JUDGE_KEY": "..."})

Configuration (a mapping passed to create_app, or environment variables prefixed CASTELLAN_):
DATABASE (a file path, sqlite:///PATH or postgresql://...; default: castellan.sqlite3 in the
instance folder), JUDGE_KEY (who holds it may mark results as rulings; unset: nobody can),
SECRET_KEY (signs the cookie that lets a browser correct what it uploaded), MAX_PHOTO_BYTES.
"""
from __future__ import annotations

import logging
import os
import secrets
from typing import Any, Mapping

from flask import Flask, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from .service import RequestProblem
from .storage import StorageError, open_storage
from .uploads import DEFAULT_MAX_PHOTO_BYTES, MB

log = logging.getLogger(__name__)


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    app = Flask(__name__, instance_relative_config=True)
    app.config.update(
        DATABASE=None,
        JUDGE_KEY=None,
        SECRET_KEY=None,
        MAX_PHOTO_BYTES=DEFAULT_MAX_PHOTO_BYTES,
        PROFILE=None,
    )
    app.config.from_prefixed_env("CASTELLAN")
    if config:
        app.config.update(config)
    for key in ("DATABASE", "JUDGE_KEY", "SECRET_KEY", "PROFILE"):
        # from_prefixed_env reads values as JSON: a numeric secret must still be a string.
        if app.config.get(key) is not None and not isinstance(app.config[key], str):
            app.config[key] = str(app.config[key])
    photo_limit = int(app.config["MAX_PHOTO_BYTES"])
    # Judge mode sends two photos in one request; multipart framing adds a little.
    if not app.config.get("MAX_CONTENT_LENGTH"):
        app.config["MAX_CONTENT_LENGTH"] = 2 * photo_limit + 2 * MB
    app.config["MAX_FORM_MEMORY_SIZE"] = 4 * MB  # castles pasted as form text
    if not app.config.get("SECRET_KEY"):
        # Without a configured key, edit rights of browsers last until the server restarts.
        app.config["SECRET_KEY"] = secrets.token_hex(32)
    app.json.sort_keys = False  # keep castellan-score/1 in the engine's order
    # The cookie that lets a browser correct its own upload is never sent by other sites' requests.
    app.config.setdefault("SESSION_COOKIE_SAMESITE", "Lax")
    app.config["SESSION_COOKIE_HTTPONLY"] = True

    database = app.config.get("DATABASE")
    if not database:
        os.makedirs(app.instance_path, exist_ok=True)
        database = os.path.join(app.instance_path, "castellan.sqlite3")
        app.config["DATABASE"] = database
    app.extensions["castellan_storage"] = open_storage(database)
    # A broken calibration profile stops the server at start (ProfileError names the field) rather
    # than being ignored photo after photo.
    from calibration.profiles import profile_from_setting

    app.extensions["castellan_profile"] = profile_from_setting(app.config.get("PROFILE"))

    from .api import bp as api_bp
    from .pages import bp as pages_bp

    app.register_blueprint(api_bp)
    app.register_blueprint(pages_bp)
    _register_errors(app)

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    return app


def _wants_json() -> bool:
    return request.path.startswith("/api/") or request.path == "/openapi.json"


def _register_errors(app: Flask) -> None:
    @app.errorhandler(RequestProblem)
    def problem(exc: RequestProblem):
        if _wants_json():
            return jsonify({"error": exc.message, **exc.extra}), exc.status
        return render_template("error.html", message=exc.message, status=exc.status), exc.status

    @app.errorhandler(StorageError)
    def storage_down(exc: StorageError):
        log.error("storage failed on %s %s: %s", request.method, request.path, exc)
        return problem(RequestProblem(503, "The database is not available right now; nothing was stored. Try again in a minute."))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        message = _friendly(exc)
        if _wants_json():
            response = jsonify({"error": message})
            response.status_code = exc.code or 500
            return response
        return render_template("error.html", message=message, status=exc.code), exc.code

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.path)
        message = "Something went wrong on the server; nothing was stored. Please try again."
        if _wants_json():
            return jsonify({"error": message}), 500
        return render_template("error.html", message=message, status=500), 500


def _friendly(exc: HTTPException) -> str:
    if exc.code == 413:
        limit = request.max_content_length or 0
        return (f"The upload is too large (the limit is {limit / MB:.0f} MB for the whole request). "
                "Send a smaller photo.")
    if exc.code == 404:
        return "Not found: check the link."
    if exc.code == 405:
        return f"{request.method} is not allowed here."
    return exc.description or exc.name
