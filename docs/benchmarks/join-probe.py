#!/usr/bin/env python3
"""Ask a model whether each pair `relata entities undecided` would list on the labelled
mention set names one thing (resolution.md, 3f-iii). A probe, not part of relata: it reads
the pairs the labelled-set test prints on stdin, shows the model the sentence of each
summary that writes each name, and counts its answers against the labels.

    cargo test -p relata-tests --test pipeline real_model_corpus_mentions -- --ignored \
        --nocapture 2>&1 | grep -E '^  (one|two) ' | python3 docs/benchmarks/join-probe.py
"""
import collections
import json
import os
import sys
import urllib.request

summaries = json.load(open(os.environ["RELATA_REAL_MODEL_SUMMARIES"]))
url = os.environ["RELATA_MODEL_URL"].rstrip("/") + "/chat/completions"
SYSTEM = (
    "You decide whether two names, each in a sentence from a different document, name the "
    "same real thing (the same person, place, work, event or organization), or two different "
    "things that share a name.\n"
    'Reply with JSON: "a_is": what the name in sentence A refers to, in a few words taken from '
    'sentence A; "b_is": the same for sentence B; "same": true only if both are the same real '
    "thing, false otherwise."
)
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a_is", "b_is", "same"],
    "properties": {
        "a_is": {"type": "string", "maxLength": 80},
        "b_is": {"type": "string", "maxLength": 80},
        "same": {"type": "boolean"},
    },
}


def side(text):
    """'Name (Title)' -> (name, title); a title may hold parentheses itself."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return text[:i].strip(), text[i + 1 : -1]
    raise ValueError(text)


def sentence(title, name):
    v = summaries[title]
    t = v["extract"] if isinstance(v, dict) else v
    at = t.find(name)
    if at < 0:
        at = t.lower().find(name.lower())
    s = t.rfind(". ", 0, at)
    e = t.find(". ", at)
    return t[0 if s < 0 else s + 2 : len(t) if e < 0 else e + 1]


counts = collections.Counter()
for line in sys.stdin:
    label, rest = line.strip().split(" ", 1)
    (a, ta), (b, tb) = (side(x) for x in rest.split(" / "))
    user = (
        f"Sentence A: {sentence(ta, a)}\nName in A: {a}\n\n"
        f"Sentence B: {sentence(tb, b)}\nName in B: {b}\n"
    )
    body = {
        "model": os.environ.get("RELATA_MODEL_NAME", "model"),
        "temperature": 0,
        "max_tokens": 200,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": user},
        ],
        "response_format": {"type": "json_object", "schema": SCHEMA},
    }
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    reply = json.load(urllib.request.urlopen(req, timeout=300))
    out = json.loads(reply["choices"][0]["message"]["content"])
    said = "one" if out["same"] else "two"
    counts[(label, said)] += 1
    print(f"{label} said {said}: {a} ({ta}) = {out['a_is']!r} / {b} ({tb}) = {out['b_is']!r}")
for (label, said), n in sorted(counts.items()):
    print(f"labelled {label}, the model said {said}: {n}")
