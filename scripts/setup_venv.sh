#!/usr/bin/env bash
# Create or refresh .venv with pufferlib (editable) and the given extras, pinned by constraints.txt.
# Usage: source scripts/setup_venv.sh [EXTRAS]     e.g. "test" or "test,bench"
# Re-installs only when pyproject.toml, setup.py or constraints.txt changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-test}"
venv="${PUFFER_VENV:-$root/.venv}"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "pufferlib needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
stamp="$venv/.puffer-installed-$extras"
inputs=("$root/pyproject.toml" "$root/constraints.txt" "$root/docker/envs/requirements-nodeps.txt")
[ -f "$root/setup.py" ] && inputs+=("$root/setup.py")
needs_install=0
[ -f "$stamp" ] || needs_install=1
for f in "${inputs[@]}"; do [ "$f" -nt "$stamp" ] && needs_install=1; done
if [ "$needs_install" = 1 ]; then
    echo "setup: installing pufferlib[$extras] into $venv (pinned by constraints.txt)"
    # Build dependencies come from the venv (--no-build-isolation), so they obey the same pins.
    "$venv/bin/python" -m pip install --quiet --upgrade --constraint "$root/constraints.txt" setuptools wheel
    "$venv/bin/python" -m pip install --quiet --constraint "$root/constraints.txt" \
        --no-build-isolation --editable "${root}[$extras]"
    # A few env packages declare pins we do not use (numpy<2, an exact gymnasium) yet run with ours;
    # they go in without their metadata's dependencies, at the constraints.txt versions.
    "$venv/bin/python" -m pip install --quiet --no-deps --constraint "$root/constraints.txt" \
        --requirement "$root/docker/envs/requirements-nodeps.txt"
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
