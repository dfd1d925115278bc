#!/usr/bin/env bash
# The GPU check in one command (docs/gpu.md). On a GPU machine without a package registry:
#   bash scripts/lab/gpu_wheels.sh                  # first, here, where pip works: the wheels it lacks, into .whl/
#   bash scripts/lab/gpu_check.sh OUT               # there: install .whl/, build (C envs, CUDA kernel), every step
#   bash scripts/lab/gpu_check.sh OUT --rehearse    # the same steps on a CPU machine, tiny, in .venv (CI runs this)
# Every step's figures land in OUT (results.json, gpu.md, curves.png, steps.log, build.log);
# `python -m lab.gpu_check --write-docs OUT` puts them into docs/ afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: bash scripts/lab/gpu_check.sh OUT [--rehearse] [--budget-s SECONDS]}"
shift
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [[ " $* " == *" --rehearse "* ]]; then
    source scripts/setup_venv.sh test
    exec python -m lab.gpu_check --out "$out" "$@"
fi
start=$SECONDS
python=python3
# The machine's own python has no venv, so no .pth from scripts/setup_venv.sh puts the lab on its path:
# scripts/ goes on it here, for `-m lab.gpu_check` and the processes it starts.
export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
# The machine's own python holds a CUDA torch, numpy and the rest; the wheels add what it lacks, without
# touching what it has (--no-deps), in a folder that comes first on the path.
wheels=(.whl/*.whl)
if [ -e "${wheels[0]}" ]; then
    echo "gpu_check: installing ${#wheels[@]} wheels from .whl/"
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/puffer-site \
        "${wheels[@]}" > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
    export PYTHONPATH="/tmp/puffer-site${PYTHONPATH:+:$PYTHONPATH}"
fi
echo "gpu_check: building the C envs and the CUDA kernel ($(nproc) jobs)"
# build_ext in parallel first; the editable install then finds every extension up to date.
if ! { "$python" setup.py build_ext --inplace --parallel "$(nproc)" &&
       "$python" -m pip install --no-index --no-deps --no-build-isolation --editable .; } >> "$out/build.log" 2>&1; then
    echo "gpu_check: the build failed; the end of $out/build.log:" >&2
    tail -30 "$out/build.log" >&2
    exit 1
fi
grep -i "cuda" "$out/build.log" | grep -i -E "skip|note|fail" | head -3 || true
echo "gpu_check: set-up took $((SECONDS - start)) s"
budget=$((480 - (SECONDS - start)))
exec "$python" -m lab.gpu_check --out "$out" --budget-s "$budget" "$@"
