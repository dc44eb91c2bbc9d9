#!/usr/bin/env python3
"""Ask a model to pick the one sentence of the retrieved passages that answers a question
(or none), and copy the answer from it: an extractive answer, tried against relata's
answer-p2 (docs/benchmarks/answers.md). A probe, not part of relata: it reads the passages
`RELATA_BENCH_DUMP_PASSAGES=passages.jsonl relata-bench retrieval` wrote and the answers
`RELATA_BENCH_DUMP_ANSWERS=answers.jsonl relata-bench quality --every 7` wrote (for which
questions relata abstains on before the model), and asks the model the environment names
(`eval "$(RELATA_REAL_MODEL=qwen scripts/real-model.sh)"`).

usage: answer-probe.py passages.jsonl answers.jsonl questions.json
"""
import json, os, re, sys, time, urllib.request

passages_path, answers_path, questions_path = sys.argv[1:4]
URL = os.environ["RELATA_MODEL_URL"].rstrip("/") + "/chat/completions"
MODEL = os.environ["RELATA_MODEL_NAME"]
gold = {q["id"]: q for q in json.load(open(questions_path))["questions"]}
asked = {}
for line in open(answers_path):
    a = json.loads(line)
    asked[a["id"]] = a
PRE_MODEL = {"no_sources", "not_in_sources", "figure_not_given"}

def sentences(text):
    return [s.strip() for s in re.split(r'(?<=[.!?])\s+(?=[A-Z0-9"(])', text) if len(s.strip()) > 3]

SYSTEM = (
    "You answer a question from numbered sentences of some documents (S1, S2, ...).\n"
    "Find the one sentence that answers the question. \"sentence\": its handle. "
    "\"answer\": the shortest words of that sentence that answer the question, copied exactly.\n"
    "If no sentence answers the question, \"sentence\": \"none\" and \"answer\": \"\".\n"
    "Do not use anything you know that the sentences do not say.\n"
    "Example. [Portugal] S1: Lisbon is the capital of Portugal. S2: The Tagus flows into the Atlantic.\n"
    "Question: What is the capital of Portugal?\nReply: {\"sentence\": \"S1\", \"answer\": \"Lisbon\"}\n"
    "Question: Who founded Lisbon?\nReply: {\"sentence\": \"none\", \"answer\": \"\"}\n"
    "Reply with exactly one JSON object."
)

def words(t):
    return [w.lower() for w in re.split(r"\W+", t) if (len(w) >= 3 or any(c.isdigit() for c in w))
            and w.lower() not in ("the", "and", "for", "was", "are")]

def matches(answer, gold_answer):
    said, g = words(answer), words(gold_answer)
    figs = [w for w in g if any(c.isdigit() for c in w)]
    return bool(g) and (all(w in said for w in g) or (bool(figs) and all(f in said for f in figs)))

rows = []
for line in open(passages_path):
    p = json.loads(line)
    if p["id"] not in asked or p["kind"] == "disagreement":
        continue
    pre = any(c in PRE_MODEL for c in asked[p["id"]]["caveats"])
    handles, lines = [], []
    for doc in p["passages"]:
        lines.append(f"[{doc['title']}]")
        for s in sentences(doc["text"]):
            h = f"S{len(handles) + 1}"
            handles.append((h, s))
            lines.append(f"{h}: {' '.join(s.split())}")
    schema = {"type": "object", "additionalProperties": False, "required": ["sentence", "answer"],
              "properties": {"sentence": {"type": "string", "enum": [h for h, _ in handles] + ["none"]},
                             "answer": {"type": "string", "maxLength": 200}}}
    body = {"model": MODEL, "temperature": 0, "max_tokens": 120,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": "\n".join(lines) + f"\nQuestion: {p['question']}\n"}],
            "response_format": {"type": "json_object", "schema": schema}}
    t0 = time.time()
    req = urllib.request.Request(URL, json.dumps(body).encode(), {"Content-Type": "application/json"})
    out = json.load(urllib.request.urlopen(req, timeout=600))
    took = time.time() - t0
    try:
        reply = json.loads(out["choices"][0]["message"]["content"])
    except ValueError:
        reply = {"sentence": "?", "answer": ""}
    chosen = dict(handles).get(reply.get("sentence"), "")
    verbatim = bool(reply.get("answer")) and reply["answer"] in chosen
    q = gold[p["id"]]
    gold_sentence = q["gold"][0]["sentence"].strip() if q["gold"] else None
    row = {"id": p["id"], "kind": p["kind"], "pre_model": pre, "question": p["question"],
           "sentence": reply.get("sentence"), "answer": reply.get("answer"), "verbatim": verbatim,
           "gold_sentence_picked": bool(gold_sentence) and bool(chosen) and (chosen in gold_sentence or gold_sentence in chosen),
           "matches_gold": bool(q.get("answer")) and matches(reply.get("answer") or "", q["answer"]),
           "answer_p2": asked[p["id"]]["status"], "seconds": round(took, 1),
           "completion_tokens": out.get("usage", {}).get("completion_tokens")}
    rows.append(row)
    print(json.dumps(row, ensure_ascii=False), flush=True)

def tally(kind, sent_only):
    rs = [r for r in rows if r["kind"] == kind and (not sent_only or not r["pre_model"])]
    none = sum(r["sentence"] == "none" for r in rs)
    right = sum(r["sentence"] != "none" and r["verbatim"] and r["gold_sentence_picked"] and r["matches_gold"] for r in rs)
    return len(rs), none, right
for kind in ("answerable", "unanswerable"):
    n, none, right = tally(kind, False)
    m, none_sent, _ = tally(kind, True)
    print(f"# {kind}: {n} asked; none {none}; gold sentence picked, answer copied from it and matching {right}; "
          f"of the {m} relata sends to the model: none {none_sent}", file=sys.stderr)
