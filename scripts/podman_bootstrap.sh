# Sourced by scripts/build_images.sh for --podman-bootstrap (docs/docker.md, "Podman instead of
# Docker"): takes a Debian/Ubuntu machine with neither a Docker engine nor access to a container
# registry to one that builds and runs the images with podman. Every step checks before it acts, so
# running it again changes nothing; each prints one line, the details go to the log.
# shellcheck shell=bash

PODMAN_COMPOSE_VERSION=1.6.0   # a tool, not a pufferlib dependency: pinned here, not in constraints.txt
PUFFER_TOOLS=/opt/pufferlib-tools
PUFFER_DEBIAN_IMAGE=localhost/debian:bookworm
PUFFER_CONTAINER_CACHE="${PUFFER_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/puffer-containers}"

bootstrap_log="$PUFFER_CONTAINER_CACHE/bootstrap.log"
say() { printf 'bootstrap: %-58s %s\n' "$1" "$2"; }
bootstrap_fail() {
    echo "bootstrap: FAILED: $1 (details: $bootstrap_log)" >&2
    tail -15 "$bootstrap_log" | sed 's/^/    /' >&2
    exit 1
}
logged() { echo "+ $*" >> "$bootstrap_log"; "$@" >> "$bootstrap_log" 2>&1; }

# The machine's apt mirror (Debian's deb822 or one-line sources), else the public one.
debian_mirror() {
    local mirror
    mirror="$(sed -n 's/^URIs: *\(.*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)"
    [ -n "$mirror" ] || mirror="$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\/debian\)\/* .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)"
    echo "${PUFFER_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}"
}

# localhost/debian:bookworm from debootstrap, cached as a tarball (about a minute the first time).
ensure_debian_image() {
    if podman image exists "$PUFFER_DEBIAN_IMAGE"; then say "Debian base image" "present ($PUFFER_DEBIAN_IMAGE)"; return; fi
    local tarball="$PUFFER_CONTAINER_CACHE/debian-bookworm.tar" rootfs
    if [ ! -s "$tarball" ]; then
        rootfs="$(mktemp -d /tmp/puffer-rootfs.XXXXXX)"
        logged debootstrap --variant=minbase bookworm "$rootfs" "$(debian_mirror)" || { rm -rf "$rootfs"; bootstrap_fail "debootstrap"; }
        tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
        rm -rf "$rootfs"
    fi
    logged podman import "$tarball" "$PUFFER_DEBIAN_IMAGE" || bootstrap_fail "podman import"
    say "Debian base image" "made ($PUFFER_DEBIAN_IMAGE, debootstrap)"
}

# Podman's defaults fail in some sandboxes and CI machines: crun under a cgroup v1 layout, rlimits the
# kernel refuses ("error setting rlimit type 7"), no network in a container's own netns. Probe
# containers decide: when one fails, the settings known to work there go to a drop-in of their own
# (never into your containers.conf); when they pass, nothing is written.
PODMAN_SETTINGS='[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
netns = "host"
[engine]
runtime = "runc"'
ensure_podman_settings() {
    local conf=/etc/containers/containers.conf.d/50-pufferlib.conf
    probe() {
        logged podman run --rm --pull=never "$PUFFER_DEBIAN_IMAGE" true \
            && logged podman run --rm --pull=never "$PUFFER_DEBIAN_IMAGE" getent hosts deb.debian.org
    }
    if probe; then
        if [ -f "$conf" ]; then say "podman settings" "$conf"; else say "podman settings" "defaults work"; fi
        return
    fi
    mkdir -p "$(dirname "$conf")"
    printf '# Written by pufferlib (scripts/podman_bootstrap.sh): a probe container failed without it.\n%s\n' \
        "$PODMAN_SETTINGS" > "$conf"
    probe || bootstrap_fail "podman cannot run a container with network even with $conf"
    say "podman settings" "written: $conf (runc, ulimits, host network)"
}

podman_bootstrap() {
    if [ "$(id -u)" != 0 ]; then
        echo "build_images.sh: --podman-bootstrap installs packages and writes /etc/containers: run it as root:" >&2
        echo "  sudo $0 $*" >&2
        exit 1
    fi
    mkdir -p "$PUFFER_CONTAINER_CACHE"
    echo "==== $(date -u +%FT%TZ) build_images.sh $*" >> "$bootstrap_log"

    local missing=() tool
    for tool in podman runc debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
    if [ ${#missing[@]} -gt 0 ]; then
        logged apt-get update || bootstrap_fail "apt-get update"
        logged env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
            || bootstrap_fail "apt-get install ${missing[*]}"
        say "apt: ${missing[*]}" "installed"
    else
        say "apt: podman runc debootstrap python3-venv" "present"
    fi
    say "podman" "$(podman --version | sed 's/^podman version //')"

    if [ "$("$PUFFER_TOOLS/bin/podman-compose" --version 2>/dev/null | sed -n 's/^podman-compose version //p')" != "$PODMAN_COMPOSE_VERSION" ]; then
        logged python3 -m venv "$PUFFER_TOOLS" || bootstrap_fail "python3 -m venv $PUFFER_TOOLS"
        logged "$PUFFER_TOOLS/bin/pip" install --disable-pip-version-check "podman-compose==$PODMAN_COMPOSE_VERSION" \
            || bootstrap_fail "pip install podman-compose"
        say "podman-compose $PODMAN_COMPOSE_VERSION" "installed in $PUFFER_TOOLS"
    else
        say "podman-compose $PODMAN_COMPOSE_VERSION" "present"
    fi
    ln -sfn "$PUFFER_TOOLS/bin/podman-compose" /usr/local/bin/podman-compose

    ensure_debian_image
    ensure_podman_settings

    # The build then runs as `--engine podman --cpu --base-image localhost/debian:bookworm`, with this
    # machine's pip settings (a private CA, a local wheel directory such as one holding the CPU torch
    # wheel) as build inputs, unless given on the command line.
    # shellcheck disable=SC2034  # engine and cpu belong to build_images.sh, which sources this file
    engine=podman cpu=1
    base_image="${base_image:-$PUFFER_DEBIAN_IMAGE}"
    local pip_cert pip_links
    read -r pip_cert pip_links < <(python3 - <<'EOF'
import configparser, os
files = ['/etc/xdg/pip/pip.conf', '/etc/pip.conf', os.path.expanduser('~/.pip/pip.conf'),
         os.path.expanduser('~/.config/pip/pip.conf'), os.environ.get('PIP_CONFIG_FILE', '')]
config = configparser.ConfigParser()
config.read([f for f in files if f and os.path.isfile(f)])
cert = os.environ.get('PIP_CERT') or config.get('global', 'cert', fallback='')
links = os.environ.get('PIP_FIND_LINKS') or config.get('global', 'find-links', fallback='')
local = [d for d in links.split() if os.path.isdir(d)]
print(cert if os.path.isfile(cert) else '-', local[0] if local else '-')
EOF
)
    if [ -z "$ca_bundle" ] && [ "$pip_cert" != - ]; then ca_bundle="$pip_cert"; fi
    if [ -z "$wheelhouse" ] && [ "$pip_links" != - ]; then wheelhouse="$pip_links"; fi
    say "build inputs from pip's settings" "ca-bundle ${ca_bundle:-none}, wheelhouse ${wheelhouse:-none}"
}
