#!/usr/bin/env bash
# The C style check: every C, C++ and CUDA source under ocean/ and pufferlib/csrc/ must be as
# clang-format (.clang-format at the repository root) lays it out. Run by .ci/run and the pre-commit hook.
#
#   scripts/check_c_format.sh               list the files that differ and the command that fixes them
#   scripts/check_c_format.sh --fix         rewrite them in place
#   scripts/check_c_format.sh [--fix] FILE  only these files (the pre-commit hook passes the staged ones)
#
# clang-format comes from the `clang-format` wheel of the test extra, at the version pinned in
# constraints.txt: other versions lay out a few constructs differently, so a different one is refused
# rather than trusted. CLANG_FORMAT=/path/to/clang-format picks one by hand; otherwise the project venv's
# ($PUFFER_VENV or .venv), then the one on PATH.
set -euo pipefail
fix=0
if [ "${1:-}" = --fix ]; then
    fix=1
    shift
fi
# FILE arguments are relative to where the script was started; below they are read from the root.
root="$(cd "$(dirname "$0")/.." && pwd)"
case "$PWD/" in
    "$root/") prefix= ;;
    "$root"/*) prefix="${PWD#"$root"/}/" ;;
    *) prefix="$PWD/" ;;
esac
args=()
for f in "$@"; do
    if [[ "$f" = /* ]]; then args+=("$f"); else args+=("$prefix$f"); fi
done
cd "$root"
fix_command="bash scripts/check_c_format.sh --fix"

venv="${PUFFER_VENV:-.venv}"
tool="${CLANG_FORMAT:-}"
if [ -z "$tool" ] && [ -x "$venv/bin/clang-format" ]; then tool="$venv/bin/clang-format"; fi
if [ -z "$tool" ]; then tool="$(command -v clang-format || true)"; fi
pin="$(sed -n 's/^clang-format==//p' constraints.txt)"
if [ -z "$tool" ]; then
    echo "clang-format not found: install the pinned one with" \
         "pip install --constraint constraints.txt clang-format (it comes with the test extra)" >&2
    exit 2
fi
version="$("$tool" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9][0-9.]*\).*/\1/p')" || version=
if [ -n "$pin" ] && [ "$version" != "$pin" ]; then
    echo "$tool is clang-format ${version:-of an unknown version}, the style is checked with $pin" \
         "(constraints.txt): pip install --constraint constraints.txt clang-format" >&2
    exit 2
fi

if [ ${#args[@]} -gt 0 ]; then
    files=("${args[@]}")
else
    mapfile -t files < <(find ocean pufferlib/csrc -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.hpp' \) \
        | LC_ALL=C sort)
fi

if [ "$fix" = 1 ]; then
    "$tool" -i "${files[@]}"
    exit 0
fi

# One clang-format for all files (each start of the wheel's launcher costs a Python start-up); its
# diagnostics name the files, one line per place that differs.
status=0
report="$("$tool" --dry-run --Werror "${files[@]}" 2>&1)" || status=$?
if [ "$status" != 0 ]; then
    mapfile -t differ < <(printf '%s\n' "$report" \
        | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | uniq)
    if [ ${#differ[@]} = 0 ]; then  # not a format difference (a missing file, a parse error): show it
        printf '%s\n' "$report" >&2
        exit "$status"
    fi
    echo "clang-format would change ${#differ[@]} of ${#files[@]} C files:"
    printf '  %s\n' "${differ[@]}"
    echo "see where: $tool --dry-run FILE; fix them all: $fix_command"
    exit 1
fi
echo "C format: ${#files[@]} files match .clang-format"
