#!/usr/bin/env bash
# Create or refresh .venv with pufferlib (editable) and the given extras, pinned by constraints.txt,
# and the lab (scripts/lab/) on its path.
# Usage: source scripts/setup_venv.sh [EXTRAS]     e.g. "test" or "test,bench"
# Re-installs only when pyproject.toml, setup.py or constraints.txt changed since the last install.
# Prints one line per step; pip's and the C build's output go to .venv/setup.log (shown on failure).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-test}"
venv="${PUFFER_VENV:-$root/.venv}"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "pufferlib needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
log="$venv/setup.log"
setup_step() {  # setup_step "what" COMMAND...: one line, the output to the log, the log's end on failure
    local what="$1" start=$SECONDS
    shift
    printf 'setup: %s ... ' "$what"
    echo "+ $*" >> "$log"
    if "$@" >> "$log" 2>&1; then
        echo "done ($((SECONDS - start)) s)"
    else
        echo "FAILED"
        echo "---- last lines of $log:" >&2
        tail -25 "$log" >&2
        exit 1
    fi
}
if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$venv"
    : > "$log"
    setup_step "creating $venv" "$python" -m venv "$venv"
    setup_step "upgrading pip" "$venv/bin/python" -m pip install --upgrade pip
fi
stamp="$venv/.puffer-installed-$extras"
inputs=("$root/pyproject.toml" "$root/constraints.txt" "$root/docker/envs/requirements-nodeps.txt")
[ -f "$root/setup.py" ] && inputs+=("$root/setup.py")
needs_install=0
[ -f "$stamp" ] || needs_install=1
for f in "${inputs[@]}"; do [ "$f" -nt "$stamp" ] && needs_install=1; done
if [ "$needs_install" = 1 ]; then
    pip=("$venv/bin/python" -m pip install --disable-pip-version-check --constraint "$root/constraints.txt")
    # Build dependencies come from the venv (--no-build-isolation), so they obey the same pins.
    setup_step "build tools (setuptools, wheel)" "${pip[@]}" --upgrade setuptools wheel
    setup_step "pufferlib[$extras] and its pinned dependencies, C extensions (a few minutes the first time)" \
        "${pip[@]}" --no-build-isolation --editable "${root}[$extras]"
    # A few env packages declare pins we do not use (numpy<2, an exact gymnasium) yet run with ours;
    # they go in without their metadata's dependencies, at the constraints.txt versions.
    setup_step "env packages installed without their stale pins (NLE, MiniHack, Procgen)" \
        "${pip[@]}" --no-deps --requirement "$root/docker/envs/requirements-nodeps.txt"
    touch "$stamp"
    echo "setup: ready (details: $log)"
fi
# The lab (scripts/lab/: benchmarks, baselines, the GPU check, research) is a package of this checkout but
# not of the library, so the wheel and the editable install leave it out. A .pth file in the venv puts
# scripts/ on its path instead: `python -m lab.bench_ocean` runs from any folder and tests `import lab`,
# with no path edits in the code. Rewritten only when it names another checkout.
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
if [ "$(cat "$site/puffer-lab.pth" 2>/dev/null)" != "$root/scripts" ]; then
    echo "$root/scripts" > "$site/puffer-lab.pth"
fi
export PATH="$venv/bin:$PATH"
