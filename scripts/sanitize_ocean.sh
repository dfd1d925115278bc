#!/usr/bin/env bash
# Build the Ocean C extensions with AddressSanitizer + UndefinedBehaviorSanitizer and run the Ocean
# tests (tests/test_ocean.py, tests/test_ocean_enduro_tetris_rware.py, tests/test_ocean_games.py,
# tests/test_poker.py, tests/test_ocean_board.py) against that build,
# including the `sanitize` tests (100k random steps per env, with wild actions). Any out-of-bounds
# access, leak-free use-after-free or UB aborts the test process. (tests/test_ocean_spec.py builds its
# own probe envs, which the sanitized tree does not hold.)
#
#   scripts/sanitize_ocean.sh              # from the repository root; extra args are passed to pytest
#
# The sanitized build goes to build/sanitize, so the optimised in-place build stays untouched;
# PUFFER_OCEAN_LIB tells pufferlib.ocean to load the bindings from there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
if [ -x .venv/bin/python ] && [ "$PYTHON" = python ]; then PYTHON=.venv/bin/python; fi

PUFFER_SANITIZE=1 "$PYTHON" setup.py -q build_ext --build-lib build/sanitize --build-temp build/sanitize-tmp --force

# Python itself is not instrumented, so the sanitizer runtimes must be loaded first. Leak checking
# is off because CPython keeps allocations alive until exit by design.
CC="${CC:-gcc}"
LIBS="$("$CC" -print-file-name=libasan.so) $("$CC" -print-file-name=libubsan.so)"
export LD_PRELOAD="$LIBS"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export PUFFER_OCEAN_LIB="$PWD/build/sanitize"
exec "$PYTHON" -m pytest tests/test_ocean.py tests/test_ocean_enduro_tetris_rware.py tests/test_ocean_games.py tests/test_poker.py tests/test_ocean_board.py -q -p no:cacheprovider "$@"
