"""The OpenAPI 3.1 document of the JSON API, served at GET /openapi.json."""
from __future__ import annotations

from typing import Any

COLOURS = ["red", "blue", "yellow", "green"]

_point = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
_castle = {
    "type": "object",
    "description": "castellan/1 castle (see castle-format.md): towers on lattice points, walls of length 1 "
                   "or 2, keeps inside courtyards. Unknown keys are kept and ignored.",
    "required": ["towers", "walls", "keeps"],
    "properties": {
        "format": {"const": "castellan/1"},
        "towers": {"type": "array", "items": _point},
        "walls": {"type": "array", "items": {
            "type": "object", "required": ["from", "to"],
            "properties": {"from": _point, "to": _point, "kind": {"enum": ["short", "long"]}}}},
        "keeps": {"type": "array", "items": {
            "type": "object", "required": ["colour", "at"],
            "properties": {"colour": {"enum": COLOURS},
                           "at": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                           "double": {"type": "boolean"}}}},
        "players": {"type": "array", "items": {"enum": COLOURS}},
        "sets": {"enum": [1, 2]},
    },
    "additionalProperties": True,
}
_finding = {
    "type": "object",
    "properties": {"rule": {"type": "string", "description": "rule id in rules.md, e.g. C7"},
                   "severity": {"enum": ["violation", "warning", "notice"]},
                   "message": {"type": "string"}, "at": {"type": "array"}},
}
_score = {
    "type": "object",
    "description": "castellan-score/1 (castle-format.md)",
    "properties": {
        "format": {"const": "castellan-score/1"},
        "players": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"score": {"type": "integer"}, "keeps": {"type": "integer"},
                                             "courtyards": {"type": "integer"}}}},
        "winners": {"type": "array", "items": {"enum": COLOURS}},
        "courtyards": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer"}, "owner": {"type": ["string", "null"]}, "double": {"type": "boolean"},
            "towers": {"type": "integer"}, "points": {"type": "integer"},
            "cells": {"type": "array", "items": _point}}}},
        "findings": {"type": "array", "items": {"$ref": "#/components/schemas/Finding"}},
        "castle": {"$ref": "#/components/schemas/Castle"},
    },
}
_stored = {
    "allOf": [{"$ref": "#/components/schemas/Score"}, {
        "type": "object",
        "required": ["id", "url", "edit_token"],
        "properties": {
            "id": {"type": "string"},
            "url": {"type": "string", "format": "uri", "description": "shareable link to the result page"},
            "edit_token": {"type": "string", "description": "send as X-Edit-Token to correct this castle"},
            "edit_url": {"type": "string", "format": "uri",
                         "description": "open in a browser to correct the castle on the lattice (keep it private)"},
            "reading": {"type": "object", "description": "what the photo reader measured: confidence, "
                                                         "refusal, timings, self-check findings; when refused, "
                                                         "`tentative_castle`: the castellan/1 castle it made of the "
                                                         "photo anyway (never scored): each piece to check marked "
                                                         "`check`, a doubted keep's `doubt`, each wall's `confidence`, "
                                                         "`towers_to_check`, and `unsure_absent_walls` and "
                                                         "`unsure_absent_towers` (barely seen absent)"},
            "images": {"type": "object", "additionalProperties": {"type": "string", "format": "uri"}},
        }}],
}
_error = {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
_refusal = {
    "type": "object", "required": ["error", "refusal", "id", "url"],
    "description": "the photo was stored but its castle could not be read: `refusal` says what to do; "
                   "the castle can be entered at `url` or with PUT /api/adjudications/{id}/castle",
    "properties": {"error": {"type": "string"}, "refusal": {"type": "string"}, "id": {"type": "string"},
                   "url": {"type": "string"}, "edit_token": {"type": "string"}},
}
_adjudication = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "kind": {"enum": ["score", "move"]}, "url": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
        "ruling": {"type": "boolean", "description": "marked as a ruling by a judge"},
        "ruled_at": {"type": ["string", "null"]}, "ruling_note": {"type": ["string", "null"]},
        "result": {"description": "castellan-score/1 (kind score) or the move check (kind move)"},
        "castle_read": {"oneOf": [{"$ref": "#/components/schemas/Castle"}, {"type": "null"}]},
        "castle_corrected": {"oneOf": [{"$ref": "#/components/schemas/Castle"}, {"type": "null"}]},
        "castle": {"description": "the castle that counts: corrected if corrected, else as read"},
        "reading": {"type": ["object", "null"]},
        "before": {"$ref": "#/components/schemas/Castle"}, "after": {"$ref": "#/components/schemas/Castle"},
        "player": {"enum": COLOURS}, "added": {"type": "object"},
        "images": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _err(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _json(schema_ref: str, description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_ref}"}}}}


_id_param = {"name": "adj_id", "in": "path", "required": True, "schema": {"type": "string"}}
_state = {"description": "a photo file, a castellan/1 JSON file or text, or the id/link of a stored result"}


def openapi_document(server_url: str) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Castellan Referee API",
            "version": "1",
            "description": "Score a finished game of Castellan from a phone photo or a castellan/1 castle, "
                           "check a turn, and read stored adjudications. Errors are JSON {\"error\": ...} "
                           "with a 4xx status (503 when the rules engine or photo reader is missing).",
        },
        "servers": [{"url": server_url}],
        "paths": {
            "/api/score": {"post": {
                "summary": "Score a photo or a castle and store the adjudication",
                "parameters": [
                    {"name": "store", "in": "query", "schema": {"type": "boolean", "default": True},
                     "description": "false: only score the castle, store nothing (no id)"},
                    {"name": "players", "in": "query", "schema": {"type": "array", "items": {"enum": COLOURS}},
                     "description": "colours in play, for a JSON body"}],
                "requestBody": {"required": True, "content": {
                    "multipart/form-data": {"schema": {"type": "object", "properties": {
                        "photo": {"type": "string", "format": "binary",
                                  "description": "JPEG, PNG or HEIC, at most 50 MB; send the field up to 4 times "
                                                 "for photos of one castle from different sides, read together"},
                        "castle": {"type": "string", "description": "castellan/1 JSON, instead of a photo"},
                        "players": {"type": "array", "items": {"enum": COLOURS}}}}},
                    "application/json": {"schema": {"$ref": "#/components/schemas/Castle"}}}},
                "responses": {
                    "201": _json("StoredScore", "scored and stored"),
                    "200": _json("Score", "scored, not stored (store=false)"),
                    "400": _err("not an image, empty, truncated, wrong fields, or an invalid castle"),
                    "413": _err("the photo is larger than 50 MB"),
                    "415": _err("neither multipart/form-data nor application/json"),
                    "422": {"description": "the photo could not be read; stored, with advice",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Refusal"}}}},
                    "503": _err("the rules engine or photo reader is not installed"),
                }}},
            "/api/check-move": {"post": {
                "summary": "Check one turn: the pieces added between two states and the move's legality",
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": {"type": "object", "required": ["before", "after", "player"],
                                                    "properties": {
                                                        "before": {"oneOf": [{"$ref": "#/components/schemas/Castle"},
                                                                             {"type": "string"}]},
                                                        "after": {"oneOf": [{"$ref": "#/components/schemas/Castle"},
                                                                            {"type": "string"}]},
                                                        "player": {"enum": COLOURS}}}},
                    "multipart/form-data": {"schema": {"type": "object", "required": ["player"], "properties": {
                        "before": _state, "after": _state, "player": {"enum": COLOURS}}}}}},
                "responses": {
                    "201": {"description": "the move check (with findings citing rule ids), the pieces "
                                           "`added`, and the stored `id` and `url`",
                            "content": {"application/json": {"schema": {"type": "object"}}}},
                    "400": _err("a missing or invalid state or player"),
                    "422": _err("a photo's castle could not be read"),
                    "503": _err("the rules engine or photo reader is not installed"),
                }}},
            "/api/adjudications/{adj_id}": {"get": {
                "summary": "A stored adjudication",
                "parameters": [_id_param],
                "responses": {"200": _json("Adjudication", "the adjudication"), "404": _err("no such id")}}},
            "/api/adjudications/{adj_id}/castle": {"put": {
                "summary": "Store a corrected castle and its new score",
                "parameters": [_id_param,
                               {"name": "X-Edit-Token", "in": "header", "schema": {"type": "string"}},
                               {"name": "X-Judge-Key", "in": "header", "schema": {"type": "string"}}],
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Castle"}}}},
                "responses": {"200": _json("Adjudication", "corrected"), "400": _err("invalid castle"),
                              "403": _err("neither the uploader nor a judge"),
                              "404": _err("no such id"), "409": _err("a ruling or a move check")}}},
            "/api/adjudications/{adj_id}/photos": {"post": {
                "summary": "Read more photos of a stored photo's castle together with its photos: a new "
                           "stored result (reading.photos_added_to names this one, which is kept as it was)",
                "parameters": [_id_param],
                "requestBody": {"required": True, "content": {
                    "multipart/form-data": {"schema": {"type": "object", "required": ["photo"], "properties": {
                        "photo": {"type": "string", "format": "binary",
                                  "description": "JPEG, PNG or HEIC, at most 50 MB; repeated for several, "
                                                 "4 photos in all at most"}}}}}},
                "responses": {
                    "201": _json("StoredScore", "the photos read together, scored and stored"),
                    "400": _err("no photo, a bad photo (named), or more than 4 photos in all"),
                    "404": _err("no such id"),
                    "409": _err("not a photo's result, or a ruling"),
                    "415": _err("not multipart/form-data"),
                    "422": {"description": "the photos together could not be read; stored, with advice",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Refusal"}}}},
                    "503": _err("the photo reader is not installed"),
                }}},
            "/api/adjudications/{adj_id}/ruling": {"post": {
                "summary": "Mark a result as a ruling (judges only)",
                "parameters": [_id_param, {"name": "X-Judge-Key", "in": "header", "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                    "judge_key": {"type": "string"}, "note": {"type": "string"}}}}}},
                "responses": {"200": _json("Adjudication", "marked"), "403": _err("not a judge"),
                              "404": _err("no such id"), "409": _err("nothing scored yet")}}},
            "/api/rules": {"get": {
                "summary": "The rule ids and texts that findings cite (from rules.md)",
                "responses": {"200": {"description": "rule id -> {section, text}",
                                      "content": {"application/json": {"schema": {"type": "object"}}}}}}},
            "/openapi.json": {"get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1",
                                      "content": {"application/json": {"schema": {"type": "object"}}}}}}},
        },
        "components": {"schemas": {
            "Castle": _castle, "Finding": _finding, "Score": _score, "StoredScore": _stored,
            "Error": _error, "Refusal": _refusal, "Adjudication": _adjudication,
        }},
    }
