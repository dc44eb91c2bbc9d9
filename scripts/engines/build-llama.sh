#!/usr/bin/env bash
# Build llama.cpp's llama-server and relata's llama-schema-check from the llama.cpp source
# vendored in the llama-cpp-python sdist (the same version scripts/real-model.sh installs),
# once, into the cache; later runs reuse them.
#
#   eval "$(scripts/engines/build-llama.sh)"
#
# stdout carries only `export NAME=value` lines; progress goes to stderr. About 15 minutes
# on two cores the first time. Nothing built here is committed.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${RELATA_CACHE_DIR:-$HOME/.cache/relata}"
VERSION=0.3.36
DL="$CACHE/dl"
SRC="$CACHE/llama-src/llama_cpp_python-$VERSION"
BUILD="$CACHE/llama-build"
TOOLS="$CACHE/tools-venv"
say() { printf 'build-llama: %s\n' "$*" >&2; }

# The stamp names what the binaries were built from: the sdist version and our tool's source
# (its content, not where the checkout is).
stamp="$VERSION $(cat "$HERE/llama-schema-check.cpp" "$HERE/CMakeLists.txt" | sha256sum | cut -c1-16)"
server="$BUILD/bin/llama-server"
check="$BUILD/llama-schema-check"
if [ -x "$server" ] && [ -x "$check" ] && [ "$(cat "$BUILD/stamp" 2>/dev/null)" = "$stamp" ]; then
  say "llama-server and llama-schema-check are built ($stamp)"
else
  mkdir -p "$DL" "$CACHE/llama-src"
  sdist="$DL/llama_cpp_python-$VERSION.tar.gz"
  if [ ! -s "$sdist" ]; then
    say "downloading the llama-cpp-python $VERSION sdist"
    pip download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$DL" >&2
  fi
  if [ ! -d "$SRC/vendor/llama.cpp" ]; then
    tar xzf "$sdist" -C "$CACHE/llama-src"
  fi
  if ! "$TOOLS/bin/cmake" --version >/dev/null 2>&1; then
    say "installing cmake and ninja into $TOOLS"
    python3 -m venv "$TOOLS" >&2
    "$TOOLS/bin/pip" install --quiet cmake ninja >&2
  fi
  export PATH="$TOOLS/bin:$PATH"
  # CMake ties a build directory to one source directory: build from a copy in the cache,
  # so every checkout (a CI clone anywhere) shares the build.
  TOOL_SRC="$CACHE/llama-tool-src"
  mkdir -p "$TOOL_SRC"
  cp "$HERE/llama-schema-check.cpp" "$HERE/CMakeLists.txt" "$TOOL_SRC/"
  if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$TOOL_SRC" "$BUILD/CMakeCache.txt"; then
    rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
  fi
  say "building llama-server and llama-schema-check (about 15 minutes once; log: $BUILD.log)"
  # GGML_NATIVE=OFF: a build tuned to one CPU crashes on another machine of the same kind.
  if ! { cmake -S "$TOOL_SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DLLAMA_SOURCE_DIR="$SRC/vendor/llama.cpp" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
          -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
          -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
        && cmake --build "$BUILD" --target llama-server llama-schema-check -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}"; } \
        >"$BUILD.log" 2>&1; then
    say "the build failed; last lines of $BUILD.log:"
    tail -n 30 "$BUILD.log" >&2
    exit 1
  fi
  echo "$stamp" >"$BUILD/stamp"
fi

cat <<EOS
export RELATA_LLAMA_SERVER=$server
export RELATA_LLAMA_SCHEMA_CHECK=$check
EOS
