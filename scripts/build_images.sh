#!/usr/bin/env bash
# Build the three image layers in order: puffer-base -> puffer-envs -> puffer (docs/docker.md).
#
#   scripts/build_images.sh                          GPU images with docker (or podman when docker has no engine)
#   scripts/build_images.sh --cpu                    CPU-only: Debian base, CPU torch wheel
#   scripts/build_images.sh --only puffer            the fast layer alone (after editing source)
#   scripts/build_images.sh --wheelhouse DIR --ca-bundle FILE     offline / behind a TLS-inspecting proxy
#   scripts/build_images.sh -- --no-cache            anything after -- goes to every `build` call
#   sudo scripts/build_images.sh --podman-bootstrap  a machine with neither Docker nor a registry: see below
#
# Options:
#   --engine docker|podman   container engine (default: docker if its engine answers, else podman)
#   --cpu                    CPU-only base (BASE_IMAGE defaults to debian:12.11-slim) and, unless a
#                            wheelhouse provides torch, the CPU torch index
#   --base-image IMAGE       the image under layer 1 (e.g. localhost/debian:bookworm)
#   --only LAYERS            comma-separated subset of base,envs,puffer
#   --wheelhouse DIR         local wheels pip may use (passed as the `wheelhouse` build context)
#   --ca-bundle FILE         extra CA certificates for pip (passed as the `ca_bundle` build secret)
#   --podman-bootstrap       as root on Debian/Ubuntu: install podman, runc, debootstrap and podman-compose
#                            (in /opt/pufferlib-tools, linked into /usr/local/bin), add the podman settings
#                            this machine needs (/etc/containers/containers.conf.d/50-pufferlib.conf, only
#                            when a probe container fails without them), make the Debian base locally with
#                            debootstrap (localhost/debian:bookworm, no registry needed), then build the CPU
#                            images with podman. pip settings of this machine (cert, find-links) become
#                            --ca-bundle / --wheelhouse unless given. One line per step; details in
#                            ~/.cache/puffer-containers/bootstrap.log. Safe to run again.
# Environment: PUFFER_IMAGE, PUFFER_ENVS_IMAGE, PUFFER_BASE_IMAGE (tags), PUFFER_UID/PUFFER_GID
# (default: yours, or 1000 when you are root), PUFFER_ENV_EXTRAS (default torch,train,wandb,common),
# PIP_INDEX_URL / PIP_EXTRA_INDEX_URL / PIP_TRUSTED_HOST (forwarded as build args when set).
set -euo pipefail
cd "$(dirname "$0")/.."

engine="" cpu=0 base_image="" only="base,envs,puffer" wheelhouse="" ca_bundle="" bootstrap=0
extra=() all_args=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --podman-bootstrap) bootstrap=1; shift ;;
        --engine) engine="$2"; shift 2 ;;
        --cpu) cpu=1; shift ;;
        --base-image) base_image="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --wheelhouse) wheelhouse="$2"; shift 2 ;;
        --ca-bundle) ca_bundle="$2"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "build_images.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ "$bootstrap" = 1 ]; then
    # shellcheck source=scripts/podman_bootstrap.sh
    source scripts/podman_bootstrap.sh
    podman_bootstrap "${all_args[@]}"  # sets engine, cpu, base_image, and wheelhouse/ca_bundle when found
fi

if [ -z "$engine" ]; then
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker
    elif command -v podman >/dev/null; then engine=podman
    else echo "build_images.sh: neither a docker engine nor podman found. On a GPU box: sudo scripts/provision_box.sh (installs Docker); on a machine without Docker or a registry, as root: scripts/build_images.sh --podman-bootstrap (installs podman; docs/docker.md)" >&2; exit 1
    fi
fi

base_tag="${PUFFER_BASE_IMAGE:-puffer-base:latest}"
envs_tag="${PUFFER_ENVS_IMAGE:-puffer-envs:latest}"
puffer_tag="${PUFFER_IMAGE:-puffer:latest}"
uid="${PUFFER_UID:-$(id -u)}" gid="${PUFFER_GID:-$(id -g)}"
if [ "$uid" = 0 ]; then uid=1000 gid=1000; fi  # the image user is never root
torch_version="$(sed -n 's/^torch==\([^ ;#]*\).*/\1/p' constraints.txt)"
[ -n "$torch_version" ] || { echo "build_images.sh: no torch==VERSION pin in constraints.txt" >&2; exit 1; }

common=()
if [ "$engine" = podman ]; then
    # Host network: podman build containers reach registries only through it. Docker format: OCI
    # images drop the SHELL instruction (RUN would lose pipefail).
    common+=(--network=host --format=docker)
fi
for var in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST; do
    if [ -n "${!var:-}" ]; then common+=(--build-arg "$var=${!var}"); fi
done
if [ -n "$wheelhouse" ]; then
    [ -d "$wheelhouse" ] || { echo "build_images.sh: wheelhouse $wheelhouse is not a directory" >&2; exit 1; }
    common+=(--build-context "wheelhouse=$(cd "$wheelhouse" && pwd)")
fi
if [ -n "$ca_bundle" ]; then
    [ -r "$ca_bundle" ] || { echo "build_images.sh: cannot read CA bundle $ca_bundle" >&2; exit 1; }
    common+=(--secret "id=ca_bundle,src=$ca_bundle")
fi

base_args=(--build-arg "TORCH_VERSION=$torch_version" --build-arg "PUFFER_UID=$uid" --build-arg "PUFFER_GID=$gid")
if [ "$cpu" = 1 ]; then
    base_args+=(--build-arg "BASE_IMAGE=${base_image:-debian:12.11-slim}")
    if ! ls "${wheelhouse:-/nonexistent}"/torch-"$torch_version"*.whl >/dev/null 2>&1 && [ -z "${PIP_EXTRA_INDEX_URL:-}" ]; then
        base_args+=(--build-arg "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu")
    fi
elif [ -n "$base_image" ]; then
    base_args+=(--build-arg "BASE_IMAGE=$base_image")
fi

build() {  # build LAYER TAG ARGS...
    local layer="$1" tag="$2" start
    shift 2
    start=$SECONDS
    echo "== building $tag (docker/$layer/Dockerfile) with $engine"
    "$engine" build -f "docker/$layer/Dockerfile" -t "$tag" "${common[@]}" "$@" "${extra[@]}" .
    echo "== $tag built in $((SECONDS - start)) s"
}

case ",$only," in *,base,*) build base "$base_tag" "${base_args[@]}" ;; esac
case ",$only," in *,envs,*) build envs "$envs_tag" --build-arg "BASE_IMAGE=$base_tag" \
    --build-arg "ENV_EXTRAS=${PUFFER_ENV_EXTRAS:-torch,train,wandb,common}" ;; esac
case ",$only," in *,puffer,*) build puffer "$puffer_tag" --build-arg "ENVS_IMAGE=$envs_tag" ;; esac
