#!/usr/bin/env bash
# The wheels a GPU machine without a package registry needs for scripts/lab/gpu_check.sh, fetched here into
# .whl/ (git-ignored), at the versions of constraints.txt, for its Python 3.12 on x86-64 Linux.
#   bash scripts/lab/gpu_wheels.sh            # fetch
#   bash scripts/lab/gpu_wheels.sh --list     # the NAME==VERSION lines it would fetch
# The machine already has torch, numpy, psutil, rich, threadpoolctl, matplotlib, pillow, imageio, opencv, pytest and
# hypothesis (the device notes list its packages); these are the rest of our runtime and build needs.
set -euo pipefail
cd "$(dirname "$0")/../.."
names=(setuptools wheel gymnasium farama-notifications pettingzoo cloudpickle ale-py pytest-timeout)
pins=()
for name in "${names[@]}"; do
    pin=$(grep -i -E "^${name//-/[-_]}==" constraints.txt | head -1 || true)

    [ -z "$pin" ] && { echo "gpu_wheels: no version of $name in constraints.txt" >&2; exit 1; }
    pins+=("$pin")
done
if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "${pins[@]}"
    exit 0
fi
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${pins[@]}"
wheels=(.whl/*.whl)
echo "gpu_wheels: ${#wheels[@]} wheels in .whl/ ($(du -sh .whl | cut -f1)); carry .whl with the tree"
