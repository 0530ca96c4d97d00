"""The rule ids and texts that findings cite, from webapp/rules.json (copied from rules.md by
webapp/gen_rules.py, so the app needs no spec folder at run time)."""
from __future__ import annotations

import json
from pathlib import Path

_DATA = json.loads(Path(__file__).with_name("rules.json").read_text(encoding="utf-8"))
RULES: dict[str, dict[str, str]] = _DATA["rules"]
SOURCE: str = _DATA["source"]


def rule_text(rule_id: str | None) -> str:
    """The text of a rule, or an empty string for an id rules.md does not define."""
    if not rule_id:
        return ""
    entry = RULES.get(str(rule_id).strip().upper())
    return entry["text"] if entry else ""
