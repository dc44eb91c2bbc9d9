#!/usr/bin/env python3
"""Would a third test before the model, for questions that ask "Who …", abstain on
unanswerable ones without abstaining on answerable ones? A probe, not part of relata
(docs/benchmarks/answers.md): it reads the passages
`RELATA_BENCH_DUMP_PASSAGES=passages.jsonl relata-bench retrieval` wrote and asks, for
each "Who" question of the set, whether any sentence about the question's names (its
passage's title or the sentence writes one of them) holds a person-like name: two
capitalised words in a row, not opening the sentence, neither a word of the question.
The test would abstain where none does. No model is asked.

usage: who-probe.py passages.jsonl questions.json
"""
import json, re, sys

passages_path, questions_path = sys.argv[1:3]
questions = {q["id"]: q for q in json.load(open(questions_path))["questions"]}
# Capitalised words of a question that name no thing of their own.
NOT_NAMES = set("Who What When Where Which How The A An In Of And For By To US".split())


def question_names(question):
    words = re.findall(r"[A-Z][\w'’\-À-ÿ]+", question)
    return [w.lower().removesuffix("'s") for w in words[1:] if w not in NOT_NAMES]


def sentences(text):
    return re.split(r"(?<=[.!?])\s+", text)


def names_a_person(sentence, question_words):
    tokens = re.findall(r"[\w'’\-À-ÿ]+", sentence)
    for i in range(1, len(tokens) - 1):
        a, b = tokens[i], tokens[i + 1]
        if (
            a[0].isupper()
            and b[0].isupper()
            and not a.isupper()
            and a not in NOT_NAMES
            and a.lower() not in question_words
            and b.lower() not in question_words
        ):
            return True
    return False


tally = {}
for line in open(passages_path):
    row = json.loads(line)
    q = questions[row["id"]]
    if not q["question"].startswith("Who") or q["kind"] == "disagreement":
        continue
    names = question_names(q["question"])
    words = {w.lower() for w in re.findall(r"[\w'’\-À-ÿ]+", q["question"])}
    # A question whose names no passage mentions is abstained on already (the names test).
    mentioned = all(any(n in p["text"].lower() for p in row["passages"]) for n in names)
    found = any(
        names_a_person(s, words)
        for p in row["passages"]
        for s in sentences(p["text"])
        # With no name in the question, every sentence is about it.
        if not names or any(n in p["title"].lower() or n in s.lower() for n in names)
    )
    key = (q["kind"], "names test abstains" if not mentioned else "sent to the model",
           "would abstain" if not found else "passes")
    tally[key] = tally.get(key, 0) + 1
    if not found:
        print(f"{q['kind']:12} {key[1]:20} would abstain: {q['question']}")
for key in sorted(tally):
    print(" / ".join(key), tally[key])
