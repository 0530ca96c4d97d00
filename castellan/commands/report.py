"""Plain-text tables of a score and a move check for the terminal."""
from __future__ import annotations

from scoring import MoveCheck, Score
from scoring.findings import Finding


def _findings(findings: tuple[Finding, ...]) -> list[str]:
    if not findings:
        return ["Findings: none"]
    lines = ["Findings:"]
    for f in findings:
        lines.append(f"  {f.severity:<9} {f.rule:<10} {f.message}")
    return lines


def score_table(score: Score) -> str:
    lines = ["Courtyards:"]
    if not score.courtyards:
        lines.append("  (none enclosed)")
    else:
        lines.append(f"  {'#':>3}  {'owner':<8} {'towers':>6}  {'double':<6} {'points':>6}  cells")
        for c in score.courtyards:
            lines.append(f"  {c.courtyard.id:>3}  {c.owner or '-':<8} {c.towers:>6}  {'yes' if c.double else '':<6} "
                         f"{c.points:>6}  {len(c.courtyard.cells)}")
    lines += ["", "Players:", f"  {'player':<8} {'score':>5} {'keeps':>5} {'courtyards':>10}"]
    for p in sorted(score.players, key=lambda p: (-p.score, -p.keeps)):
        lines.append(f"  {p.colour:<8} {p.score:>5} {p.keeps:>5} {p.courtyards:>10}")
    if score.winners:
        shared = " (shared victory)" if len(score.winners) > 1 else ""
        lines += ["", f"Winner: {' and '.join(score.winners)}{shared}"]
    lines += [""] + _findings(score.findings)
    return "\n".join(lines)


def reader_notes(findings: list[dict]) -> str:
    """What the photo reader decided or doubted on its own (a keep that nearly looked stacked, a wall the
    rules settled), for the player to check by eye; empty when there is nothing."""
    notes = [f for f in findings if f.get("severity") == "notice"]
    if not notes:
        return ""
    lines = ["Read from the photo with doubt (check these on the table):"]
    lines += [f"  {f.get('rule', ''):<10} {f.get('message', '')}" for f in notes]
    return "\n".join(lines)


def move_table(check: MoveCheck) -> str:
    added = [f"tower {list(t)}" for t in check.added_towers] + [str(w) for w in check.added_walls] + \
            [str(k) for k in check.added_keeps]
    lines = [f"Move by {check.player}: {'LEGAL' if check.legal else 'NOT LEGAL'}", "", "Added:"]
    lines += [f"  {a}" for a in added] or ["  nothing"]
    lines += [""] + _findings(check.findings)
    return "\n".join(lines)
