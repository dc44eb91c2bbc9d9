#!/usr/bin/env bash
# The real structured-output engines relata's schemas are tested against, installed once
# into the cache:
#
#   eval "$(scripts/engines/setup.sh)"
#
# - llama.cpp's converter and grammar (llama-schema-check) and llama-server, built from the
#   llama.cpp source vendored in the llama-cpp-python sdist (build-llama.sh);
# - xgrammar and llguidance (vLLM's two back-ends), from PyPI into a venv of their own;
# - llama-cpp-python's own converter, from the venv scripts/real-model.sh builds.
#
# stdout carries only `export NAME=value` lines; progress goes to stderr.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${RELATA_CACHE_DIR:-$HOME/.cache/relata}"
VENV="$CACHE/engines-venv"
say() { printf 'engines: %s\n' "$*" >&2; }

# xgrammar's wheel asks for torch, triton and transformers; compiling a schema and matching
# a string need none of torch or triton (see torch-stand-in/), so its dependencies are
# installed by hand, pinned, and torch's 3 GB of CUDA wheels are never fetched.
if ! "$VENV/bin/python" -c 'import llguidance, transformers, tvm_ffi' >/dev/null 2>&1; then
  say "installing xgrammar and llguidance into $VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet --no-deps xgrammar==0.2.9 llguidance==1.9.1 >&2
  "$VENV/bin/pip" install --quiet apache-tvm-ffi==0.1.15.post2 pydantic==2.14.4 \
    numpy==2.4.6 typing_extensions==4.16.0 transformers==5.25.0 >&2
fi

# An assignment, so that a failed build stops this script (an `eval "$(…)"` would not).
built="$("$HERE/build-llama.sh")"
eval "$built"
if [ ! -x "$CACHE/llama-venv/bin/python" ]; then
  say "no llama-cpp-python venv: run scripts/real-model.sh first (it builds it)"
  exit 1
fi
cat <<EOS
export RELATA_LLAMA_SERVER=$RELATA_LLAMA_SERVER
export RELATA_LLAMA_SCHEMA_CHECK=$RELATA_LLAMA_SCHEMA_CHECK
export RELATA_ENGINES_PYTHON=$VENV/bin/python
export RELATA_LLAMA_PYTHON=$CACHE/llama-venv/bin/python
EOS
