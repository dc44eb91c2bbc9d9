#!/usr/bin/env python3
"""Ask a real structured-output engine about relata's schemas.

    check-schemas.py ENGINE < cases.jsonl > results.jsonl

ENGINE is `xgrammar` (vLLM's default back-end), `llguidance` (vLLM's `guidance` back-end,
also llama.cpp's optional one) or `llama-cpp-python` (its server's own Python converter,
what relata's `json_object_schema` dialect reaches; run this one with that server's
Python). Each input line is {"id", "schema", "accept": [json text...], "reject": [json
text...]}; each output line is {"id", "compiled", "error"?, "accepted": [bool...],
"refused": [bool...]}: whether the engine compiles the schema, whether its grammar
matches every conforming instance, and whether it refuses each violating one. The same
protocol as llama-schema-check.cpp, so one Rust test reads all of them.

String matching is byte by byte through a byte-level vocabulary (one token per byte), so
what is checked is the grammar, not a tokenizer.
"""
import json
import os
import sys


def byte_vocab():
    return [bytes([b]) for b in range(256)] + [b"<eos>"]


class Xgrammar:
    def __init__(self):
        # tvm-ffi (xgrammar's binding layer) first, while no torch can be found: it wires
        # itself to torch when one imports, and the stand-in is only for xgrammar's own
        # import-time names.
        import tvm_ffi  # noqa: F401

        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "torch-stand-in"))
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo(byte_vocab(), xgr.VocabType.RAW, stop_token_ids=[256])
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)

    def compile(self, schema):
        # strict_mode: unknown properties refused where the schema does not say, as vLLM asks.
        return self.compiler.compile_json_schema(json.dumps(schema), strict_mode=True)

    def matches(self, compiled, text):
        m = self.xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return m.accept_string(text.encode("utf-8")) and m.is_terminated()


class Llguidance:
    def __init__(self):
        import llguidance

        self.llg = llguidance

        class Bytes:
            eos_token_id = 256
            bos_token_id = None
            tokens = byte_vocab()
            special_token_ids = [256]

            def __call__(self, s):
                return list(s if isinstance(s, bytes) else s.encode("utf-8"))

        self.tok = llguidance.LLTokenizer(llguidance.TokenizerWrapper(Bytes()))

    def compile(self, schema):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(schema)
        error = self.llg.LLMatcher.validate_grammar(grammar, self.tok)
        if error:
            raise ValueError(error)
        return grammar

    def matches(self, grammar, text):
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            return False
        ok = m.consume_tokens(list(text.encode("utf-8")))
        return ok and not m.is_error() and m.is_accepting()


class LlamaCppPython:
    """Compile only: the converter and llama.cpp's grammar parser, as its server runs them."""

    def __init__(self):
        from llama_cpp import llama_grammar

        self.lg = llama_grammar

    def compile(self, schema):
        gbnf = self.lg.json_schema_to_gbnf(json.dumps(schema))
        self.lg.LlamaGrammar.from_string(gbnf, verbose=False)
        return gbnf

    def matches(self, _compiled, _text):
        return None


ENGINES = {"xgrammar": Xgrammar, "llguidance": Llguidance, "llama-cpp-python": LlamaCppPython}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ENGINES:
        sys.exit("usage: check-schemas.py {%s} < cases.jsonl" % "|".join(ENGINES))
    engine = ENGINES[sys.argv[1]]()
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        out = {"id": case["id"]}
        try:
            compiled = engine.compile(case["schema"])
        except Exception as e:  # the engine's refusal, whatever its type
            out.update(compiled=False, error="%s: %s" % (type(e).__name__, e))
        else:
            out["compiled"] = True
            out["accepted"] = [engine.matches(compiled, t) for t in case.get("accept", [])]
            out["refused"] = [
                None if (r := engine.matches(compiled, t)) is None else not r
                for t in case.get("reject", [])
            ]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
