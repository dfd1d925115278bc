# Sourced inside a throwaway Debian container by scripts/test_containers.sh: stand-ins for the
# commands scripts/provision_box.sh uses that need a network, a GPU or a running init, so that its
# real (not --dry-run) first and second runs can be checked there. Each stand-in that would change
# the machine records its command line in /fake/calls; queries (status, is-enabled) are not recorded.
# Real: dpkg-query, usermod, id, install, the files the script writes.
# shellcheck shell=bash disable=SC2016  # the single-quoted bodies are scripts, expanded when they run
set -euo pipefail
mkdir -p /fake/bin /fake/state
: > /fake/calls

fake() {  # fake NAME BODY: /fake/bin/NAME runs BODY with "$@"
    printf '#!/usr/bin/env bash\nset -euo pipefail\n%s\n' "$2" > "/fake/bin/$1"
    chmod +x "/fake/bin/$1"
}
record='echo "$(basename "$0") $*" >> /fake/calls'

# apt-get install marks packages installed in dpkg's own database, so dpkg-query sees them.
fake apt-get "$record"'
if [ "$1" = install ]; then
    for pkg in "$@"; do
        case "$pkg" in -*|install) continue ;; esac
        printf "Package: %s\nStatus: install ok installed\nPriority: optional\nSection: misc\nMaintainer: fake\nArchitecture: all\nVersion: 1.0\nDescription: stand-in\n\n" "$pkg" >> /var/lib/dpkg/status
        [ "$pkg" != docker-ce ] || groupadd -f docker  # as the real package does
    done
fi'
# A "key" is its fingerprint in a file: the vendors' pinned ones, as published.
fake curl "$record"'
url="" out=""
while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2 ;; -*) shift ;; *) url="$1"; shift ;; esac; done
case "$url" in
    *download.docker.com*) fpr=9DC858229FC7DD38854AE2D88D81803C0EBFCD88 ;;
    *3bf863cc.pub) fpr=EB693B3035CD5710E231E123A4B469963BF863CC ;;
    *8793F200.pub) fpr=02182E60104FCDC26EAE1B8597A5D4CB8793F200 ;;
    *nvidia.github.io*) fpr=C95B321B61E88C1809C4F759DDCAE044F796ECB0 ;;
    *pkgs.tailscale.com*) fpr=2596A99EAAB33821893C0A79458CA832957F5868 ;;
    *) exit 22 ;;
esac
[ -z "${FAKE_FOREIGN_KEY:-}" ] || fpr=0000000000000000000000000000000000000000  # a key someone swapped in
echo "$fpr" > "$out"'
fake gpg '
if [ "$1" = --show-keys ]; then echo "pub:u:4096:1:0000:0:::-:::scESC::::::23::0:"; echo "fpr:::::::::$(head -1 "${!#}"):"; exit 0; fi
'"$record"'
cp "${!#}" "$4"'
fake systemctl '
case "$1" in
    is-enabled|is-active) [ -e /fake/state/docker ] ;;
    *) '"$record"'; [ "$1" != enable ] || touch /fake/state/docker ;;
esac'
fake nvidia-ctk "$record"'
mkdir -p /etc/docker && echo "{\"runtimes\": {\"nvidia\": {\"path\": \"nvidia-container-runtime\"}}}" > /etc/docker/daemon.json'
fake nvidia-smi 'echo 570.00'
fake docker "$record"
# `tailscale up` must get the key through a file; it records its arguments and what the file held.
fake tailscale '
case "$1" in
    status) [ -e /fake/state/tailscale ] ;;
    up) '"$record"'
        for arg in "$@"; do case "$arg" in --auth-key=file:*) echo "  key file holds $(wc -c < "${arg#--auth-key=file:}") bytes" >> /fake/calls ;; esac; done
        touch /fake/state/tailscale ;;
esac'

fake_state() {  # everything a run could change, as checksums
    md5sum /etc/apt/sources.list.d/* /etc/apt/keyrings/* /etc/docker/daemon.json /etc/group /var/lib/dpkg/status 2>/dev/null
    ls /fake/state
}
