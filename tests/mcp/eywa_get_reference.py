"""The text the Python eywa-mcp's `eywa_get` answers for a Python-Eywa data folder, worked
out here from seed 000 (retrieval: project matches 3x IDF, keyword matches 2x IDF with
substring matching, recency boost 1 + 1/sqrt(age) inside days_back, a 7-day half-life
beyond it, substance 0 never returned, the most recent sessions without a query) and from
eywa-mcp's answer shape ("## Eywa: N past session(s)", then each handoff file without its
frontmatter, joined by `---` rules; at most 5 handoffs).

    eywa_get_reference.py FOLDER CALLS.json   prints a JSON list: one text per call

Each call is {"query": ..., "days_back": ..., "max_handoffs": ...}. Queries are plain
lowercase words of 3+ characters that are not stopwords, so tokenizing is splitting."""
import datetime
import json
import math
import sys
from pathlib import Path


def load(folder):
    return json.loads((folder / "handoff-index.json").read_text())


def age_days(entry, today):
    return (today - datetime.date.fromisoformat(entry["date"])).days


def ranked(index, words, days_back, today):
    handoffs = index["handoffs"]
    n = max(len(handoffs), 1)
    scores = {}
    for word in words:
        for name, ids in index["by_project"].items():
            if word in name.lower():
                idf = max(0.0, math.log(n / max(len(ids), 1)))
                for sid in ids:
                    scores[sid] = scores.get(sid, 0.0) + 3 * idf
        for keyword, ids in index["by_keyword"].items():
            if word in keyword:
                idf = max(0.0, math.log(n / max(len(ids), 1)))
                for sid in ids:
                    scores[sid] = scores.get(sid, 0.0) + 2 * idf
    out = []
    for sid, score in scores.items():
        entry = handoffs[sid]
        if entry.get("substance", 1) == 0:
            continue
        age = age_days(entry, today) + 1
        if age <= days_back:
            score *= 1 + 1 / math.sqrt(max(age, 1))
        else:
            score *= 0.5 ** ((age - days_back) / 7)
        minutes = entry.get("duration_minutes") or 0
        if minutes > 0:
            score *= 1 + 0.1 * math.log(minutes + 1)
        out.append((sid, score))
    out.sort(key=lambda pair: -pair[1])
    return [sid for sid, _ in out]


def recent(index, days_back, today):
    entries = [
        (sid, e["date"])
        for sid, e in index["handoffs"].items()
        if e.get("substance", 1) != 0 and age_days(e, today) <= days_back
    ]
    entries.sort(key=lambda pair: pair[1], reverse=True)
    return [sid for sid, _ in entries]


def body(folder, index, sid):
    year, month, day = index["handoffs"][sid]["date"].split("-")
    text = (folder / "handoffs" / year / month / day / f"{sid}.md").read_text()
    if text.startswith("---"):
        parts = text.split("---", 2)
        if len(parts) == 3:
            text = parts[2].strip()
    return text


def answer(folder, index, call, today):
    limit = min(int(call.get("max_handoffs", 3)), 5)
    days_back = int(call.get("days_back", 14))
    words = (call.get("query") or "").split()
    ids = ranked(index, words, days_back, today)[:limit] if words else []
    if not ids:
        ids = recent(index, days_back, today)[:limit]
    bodies = [body(folder, index, sid) for sid in ids]
    if not bodies:
        return "No past sessions found."
    s = "" if len(bodies) == 1 else "s"
    return f"## Eywa: {len(bodies)} past session{s}\n" + "\n\n---\n\n".join(bodies)


def main():
    folder = Path(sys.argv[1])
    calls = json.loads(Path(sys.argv[2]).read_text())
    index = load(folder)
    today = datetime.date.today()
    print(json.dumps([answer(folder, index, c, today) for c in calls]))


main()
