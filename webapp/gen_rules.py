"""Regenerate webapp/rules.json from the project's rules text (shared/spec/rules.md).

The web app shows the text of every rule a finding cites. It must work from a clean checkout in
which the spec folder is not installed with the package, so the rule texts are copied once into
webapp/rules.json by this script and committed. Run it again when rules.md changes:

    python -m webapp.gen_rules ../shared/spec/rules.md
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# A rule starts with its id (a capital letter and a number) at the start of a list item or after
# the previous rule's sentence on the same line ("- M1 ... M2 ... M3 ...").
RULE_START = re.compile(r"(?:^- |(?<=[.;] ))([A-Z]\d+) ")


def parse_rules(markdown: str) -> dict[str, dict[str, str]]:
    """Rule id -> {"section", "text"} for every rule in rules.md."""
    rules: dict[str, dict[str, str]] = {}
    section = ""
    current: str | None = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            current = None
            continue
        if line.startswith("- "):
            starts = list(RULE_START.finditer(line))
            if not starts or starts[0].start() != 0:
                current = None
                continue
            for i, m in enumerate(starts):
                end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
                rules[m.group(1)] = {"section": section, "text": line[m.end():end].strip()}
            current = starts[-1].group(1)
        elif current and line.startswith("  ") and line.strip():
            rules[current]["text"] += " " + line.strip()
        else:
            current = None
    return rules


def main(argv: list[str]) -> int:
    source = Path(argv[0] if argv else Path(__file__).resolve().parents[2] / "shared/spec/rules.md")
    rules = parse_rules(source.read_text(encoding="utf-8"))
    out = {
        "source": "shared/spec/rules.md (Castellan Referee's rules text, written from the publisher's "
        "rules: German edition v1.0, September 2012, and the Russian edition, July 2013)",
        "rules": rules,
    }
    target = Path(__file__).with_name("rules.json")
    target.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rules)} rules written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
