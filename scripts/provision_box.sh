#!/usr/bin/env bash
# Take a fresh Debian 12/13 or Ubuntu 22.04/24.04 machine with an NVIDIA GPU to "ready for
# `docker compose run --rm train`": NVIDIA driver, Docker Engine + compose plugin, NVIDIA Container
# Toolkit configured for Docker, your user in the docker group, optionally Tailscale, then a GPU check.
#
#   sudo scripts/provision_box.sh                  do it (run it again: it changes and restarts nothing)
#   scripts/provision_box.sh --dry-run             print every step and command, change nothing
#   sudo scripts/provision_box.sh --tailscale --tailscale-authkey-file ~/ts.key    also join your tailnet
#
# Options:
#   --dry-run            print the plan (every command) without running anything; no root needed
#   --user NAME          who joins the docker group (default: $SUDO_USER, else the caller)
#   --tailscale          install Tailscale and run `tailscale up --ssh`, with the auth key from
#                        --tailscale-authkey-file FILE or the TS_AUTHKEY environment variable (handed to
#                        tailscale as a file, never on a command line where `ps` shows it; never printed
#                        or kept); without a key, tailscale prints a login link
#   --tailscale-authkey-file FILE   read the Tailscale auth key from FILE
#   --driver PACKAGE     NVIDIA driver package from NVIDIA's CUDA repository (default nvidia-open:
#                        open kernel modules, Turing and newer; use cuda-drivers for older GPUs)
#   --skip-driver        leave the driver alone (e.g. a cloud image that ships one)
#   --check-image IMAGE  image for the final `nvidia-smi` check (default below)
#   --os-release FILE    read the distribution from FILE instead of /etc/os-release (for testing)
#
# Every apt repository added is signed: its key goes to /etc/apt/keyrings only when its fingerprint
# is the one pinned below, and the source names it with signed-by=. Nothing is piped from the network
# into a shell. A second run finds every step done: no apt-get update, no write, no restart.
set -euo pipefail

# Repository signing keys, by full fingerprint (gpg --show-keys). A key that does not match stops the script.
FPR_DOCKER=9DC858229FC7DD38854AE2D88D81803C0EBFCD88
FPR_NVIDIA_CUDA=EB693B3035CD5710E231E123A4B469963BF863CC           # 3bf863cc.pub: Debian 12, Ubuntu
FPR_NVIDIA_CUDA_DEBIAN13=02182E60104FCDC26EAE1B8597A5D4CB8793F200  # 8793F200.pub: Debian 13
FPR_NVIDIA_CONTAINER_TOOLKIT=C95B321B61E88C1809C4F759DDCAE044F796ECB0
FPR_TAILSCALE=2596A99EAAB33821893C0A79458CA832957F5868

CHECK_IMAGE="nvidia/cuda:12.8.1-base-ubuntu24.04"
dry_run=0 tailscale=0 skip_driver=0 tailscale_key_file=""
original_args=("$@")
driver_package="nvidia-open"
os_release=/etc/os-release
target_user="${SUDO_USER:-$(id -un)}"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry_run=1; shift ;;
        --user) target_user="$2"; shift 2 ;;
        --tailscale) tailscale=1; shift ;;
        --tailscale-authkey-file) tailscale_key_file="$2"; shift 2 ;;
        --driver) driver_package="$2"; shift 2 ;;
        --skip-driver) skip_driver=1; shift ;;
        --check-image) CHECK_IMAGE="$2"; shift 2 ;;
        --os-release) os_release="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "provision_box.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

# ---- what machine is this ----
if [ ! -r "$os_release" ]; then
    echo "provision_box.sh: cannot read $os_release; supported: Debian 12, Debian 13, Ubuntu 22.04, Ubuntu 24.04" >&2
    exit 2
fi
os_field() {  # read one KEY=value from os-release without executing the file
    sed -n "s/^$1=//p" "$os_release" | head -1 | tr -d "\"'"
}
distro="$(os_field ID)" version="$(os_field VERSION_ID)" codename="$(os_field VERSION_CODENAME)"
distro="${distro:-unknown}" version="${version:-unknown}"
cuda_key=3bf863cc.pub cuda_fpr="$FPR_NVIDIA_CUDA"
case "$distro:$version" in
    debian:12) codename="${codename:-bookworm}" cuda_repo=debian12 ;;
    debian:13) codename="${codename:-trixie}" cuda_repo=debian13 cuda_key=8793F200.pub cuda_fpr="$FPR_NVIDIA_CUDA_DEBIAN13" ;;
    ubuntu:22.04) codename="${codename:-jammy}" cuda_repo=ubuntu2204 ;;
    ubuntu:24.04) codename="${codename:-noble}" cuda_repo=ubuntu2404 ;;
    *)
        echo "provision_box.sh: unsupported distribution '$distro $version' (from $os_release)." >&2
        echo "  Supported: Debian 12 (bookworm), Debian 13 (trixie), Ubuntu 22.04 (jammy), Ubuntu 24.04 (noble)." >&2
        echo "  On another system install the NVIDIA driver, Docker Engine with the compose plugin and the" >&2
        echo "  NVIDIA Container Toolkit by hand (docs/docker.md lists the steps)." >&2
        exit 2 ;;
esac
arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
case "$arch" in
    amd64) cuda_arch=x86_64 ;;
    arm64) cuda_arch=sbsa ;;
    *) echo "provision_box.sh: unsupported architecture $arch (amd64 and arm64 are)" >&2; exit 2 ;;
esac

if [ "$dry_run" = 0 ] && [ "$(id -u)" != 0 ]; then
    echo "provision_box.sh: run as root (sudo $0$(printf ' %q' "${original_args[@]}")), or with --dry-run to see the plan" >&2
    exit 1
fi
if [ -n "$tailscale_key_file" ] && [ ! -r "$tailscale_key_file" ]; then
    echo "provision_box.sh: cannot read the Tailscale auth key file $tailscale_key_file" >&2
    exit 2
fi

# ---- how steps run ----
step_number=0
step() { step_number=$((step_number + 1)); echo; echo "==> [$step_number] $*"; }
skip() { echo "    already done: $*"; }
run() {  # run a command, or print it under --dry-run
    echo "+ $*"
    if [ "$dry_run" = 0 ]; then "$@"; fi
}
install_file() {  # install_file PATH CONTENT: write only when the content differs (idempotent)
    local path="$1" content="$2"
    if [ -f "$path" ] && [ "$(cat "$path")" = "$content" ]; then skip "$path is up to date"; return; fi
    echo "+ write $path:"
    printf '%s\n' "$content" | sed 's/^/    /'
    if [ "$dry_run" = 0 ]; then install -d -m 0755 "$(dirname "$path")"; printf '%s\n' "$content" > "$path"; fi
    apt_lists_fresh=0  # a new or changed source: the next install needs an apt-get update first
}
key_fingerprints() {  # the primary-key fingerprints in a key file (armoured or not)
    gpg --show-keys --with-colons "$1" 2>/dev/null | awk -F: '$1 == "pub" { want = 1 } $1 == "fpr" && want { print $10; want = 0 }'
}
fetch_key() {  # fetch_key URL KEYRING FINGERPRINT: install a signing key once, only if it is the pinned one
    local url="$1" keyring="$2" fingerprint="$3" tmp
    if [ -s "$keyring" ]; then
        if key_fingerprints "$keyring" | grep -qx "$fingerprint"; then skip "key $keyring ($fingerprint)"; return; fi
        echo "provision_box.sh: $keyring exists but is not the key $fingerprint; move it away and run again" >&2
        exit 1
    fi
    echo "+ curl -fsSL $url; check its fingerprint is $fingerprint; gpg --dearmor (if ASCII-armoured) into $keyring"
    if [ "$dry_run" = 0 ]; then
        tmp="$(mktemp)"
        curl -fsSL "$url" -o "$tmp"
        if ! key_fingerprints "$tmp" | grep -qx "$fingerprint"; then
            echo "provision_box.sh: the key from $url has fingerprint(s) $(key_fingerprints "$tmp" | tr '\n' ' ')" >&2
            echo "  instead of the pinned $fingerprint: refusing to trust it (check the vendor's docs and update the pin)" >&2
            rm -f "$tmp"
            exit 1
        fi
        install -d -m 0755 "$(dirname "$keyring")"
        if grep -q 'BEGIN PGP PUBLIC KEY BLOCK' "$tmp"; then
            gpg --dearmor --yes -o "$keyring" "$tmp"
        else
            install -m 0644 "$tmp" "$keyring"
        fi
        rm -f "$tmp"
        chmod a+r "$keyring"
    fi
    apt_lists_fresh=0
}
apt_install() {  # apt_install PACKAGE...: only the missing ones
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if [ ${#missing[@]} = 0 ]; then skip "installed: $*"; return; fi
    if [ "$apt_lists_fresh" = 0 ]; then run apt-get update; apt_lists_fresh=1; fi
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}
apt_lists_fresh=0  # apt-get update runs only before an install, and once per change of sources

echo "provision_box.sh: $distro $version ($codename, $arch)$([ "$dry_run" = 1 ] && echo ', dry run: nothing will change')"

step "Base packages for fetching signed repository keys"
apt_install ca-certificates curl gnupg pciutils

driver_installed_now=0
step "NVIDIA driver ($driver_package from NVIDIA's CUDA repository, $cuda_repo)"
if [ "$skip_driver" = 1 ]; then
    skip "--skip-driver given"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    skip "nvidia-smi works ($(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1))"
else
    if [ "$distro" = debian ]; then
        # The driver's DKMS packages pull a few libraries from Debian's contrib component, signed by
        # Debian's own archive key (the debian-archive-keyring package every Debian has).
        install_file /etc/apt/sources.list.d/debian-contrib.list \
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $codename contrib non-free non-free-firmware"
    fi
    fetch_key "https://developer.download.nvidia.com/compute/cuda/repos/$cuda_repo/$cuda_arch/$cuda_key" \
        /etc/apt/keyrings/nvidia-cuda.gpg "$cuda_fpr"
    install_file /etc/apt/sources.list.d/nvidia-cuda.list \
        "deb [signed-by=/etc/apt/keyrings/nvidia-cuda.gpg] https://developer.download.nvidia.com/compute/cuda/repos/$cuda_repo/$cuda_arch/ /"
    apt_install "linux-headers-$(uname -r)" "$driver_package"
    driver_installed_now=1
fi

step "Docker Engine and the compose plugin (download.docker.com, $distro $codename)"
conflicting=()
for pkg in docker.io docker-doc docker-compose docker-compose-v2 podman-docker containerd runc; do
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then conflicting+=("$pkg"); fi
done
if [ ${#conflicting[@]} -gt 0 ]; then run apt-get remove -y "${conflicting[@]}"; fi
fetch_key "https://download.docker.com/linux/$distro/gpg" /etc/apt/keyrings/docker.gpg "$FPR_DOCKER"
install_file /etc/apt/sources.list.d/docker.list \
    "deb [arch=$arch signed-by=/etc/apt/keyrings/docker.gpg] https://download.docker.com/linux/$distro $codename stable"
apt_install docker-ce docker-ce-cli containerd.io docker-buildx-plugin docker-compose-plugin
if systemctl is-enabled --quiet docker 2>/dev/null && systemctl is-active --quiet docker 2>/dev/null; then
    skip "docker is enabled and running"
else
    run systemctl enable --now docker
fi

step "NVIDIA Container Toolkit, configured as a Docker runtime"
fetch_key https://nvidia.github.io/libnvidia-container/gpgkey /etc/apt/keyrings/nvidia-container-toolkit.gpg \
    "$FPR_NVIDIA_CONTAINER_TOOLKIT"
install_file /etc/apt/sources.list.d/nvidia-container-toolkit.list \
    "deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.gpg] https://nvidia.github.io/libnvidia-container/stable/deb/\$(ARCH) /"
apt_install nvidia-container-toolkit
# Registering the runtime rewrites /etc/docker/daemon.json, and only a restart makes Docker read it;
# a restart stops running containers, so both happen only when the runtime is not registered yet.
if grep -qs '"nvidia"' /etc/docker/daemon.json; then
    skip "the nvidia runtime is registered in /etc/docker/daemon.json"
else
    run nvidia-ctk runtime configure --runtime=docker
    run systemctl restart docker
fi

step "Docker without sudo for $target_user"
if [ "$dry_run" = 0 ] && ! id "$target_user" >/dev/null 2>&1; then
    echo "provision_box.sh: no user '$target_user' on this machine (pass --user NAME)" >&2
    exit 1
elif [ "$target_user" = root ]; then
    skip "root needs no docker group (pass --user NAME for your login)"
elif id -nG "$target_user" 2>/dev/null | tr ' ' '\n' | grep -qx docker; then
    skip "$target_user is in the docker group"
else
    run usermod -aG docker "$target_user"
    echo "    $target_user must log out and in again (or run: newgrp docker) for this to apply"
fi

if [ "$tailscale" = 1 ]; then
    step "Tailscale (pkgs.tailscale.com, $distro $codename)"
    fetch_key "https://pkgs.tailscale.com/stable/$distro/$codename.noarmor.gpg" /etc/apt/keyrings/tailscale.gpg \
        "$FPR_TAILSCALE"
    install_file /etc/apt/sources.list.d/tailscale.list \
        "deb [signed-by=/etc/apt/keyrings/tailscale.gpg] https://pkgs.tailscale.com/stable/$distro $codename main"
    apt_install tailscale
    if command -v tailscale >/dev/null 2>&1 && tailscale status >/dev/null 2>&1; then
        skip "tailscale is up"
    elif [ -n "$tailscale_key_file" ] || [ -n "${TS_AUTHKEY:-}" ]; then
        # tailscale reads `--auth-key=file:PATH` itself: the key never appears in a process's arguments.
        key_file="$tailscale_key_file"
        echo "+ tailscale up --ssh --auth-key=file:${key_file:-<a private temporary file holding \$TS_AUTHKEY>}"
        if [ "$dry_run" = 0 ]; then
            if [ -z "$key_file" ]; then
                key_file="$(mktemp)"  # mode 0600
                trap 'rm -f "$key_file"' EXIT
                printf '%s' "$TS_AUTHKEY" > "$key_file"
            fi
            tailscale up --ssh --auth-key="file:$key_file"
        fi
    else
        run tailscale up --ssh
    fi
fi

step "Check: a container sees the GPU"
if [ "$driver_installed_now" = 1 ] && [ "$dry_run" = 0 ] && ! nvidia-smi >/dev/null 2>&1; then
    echo "    The driver was just installed and is not loaded yet: reboot, then run this script again"
    echo "    (finished steps are skipped) to run the check."
    exit 0
fi
run docker run --rm --gpus all "$CHECK_IMAGE" nvidia-smi

echo
echo "provision_box.sh: done$([ "$dry_run" = 1 ] && echo ' (dry run: nothing was changed)'). Next: clone the repository, then"
echo "  scripts/build_images.sh && mkdir -p experiments wandb && docker compose run --rm train"
