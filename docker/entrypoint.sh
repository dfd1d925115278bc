#!/bin/sh
# Image entrypoint: run the command as the image user `puffer`, with the uid/gid of the person whose
# files these are, so that everything written to the mounted host folders belongs to them.
#
#   whose files: PUFFER_UID/PUFFER_GID when set (compose passes them from your shell or .env), else
#                the owner of PUFFER_OWNER_DIR, which defaults to the checkout mounted at /workspace
#                (`dev`, the devcontainer) and, when none is mounted, /experiments (the training services).
#
# The container starts as root only to do this (usermod on its own /etc/passwd), then drops to
# `puffer`. A folder owned by root (root ran `mkdir -p experiments wandb`, or a rootless podman maps
# you to root inside) makes `puffer` uid 0 inside: files on the host are root's, as they should be.
# Started as another user (`docker run --user`, Kubernetes), it only checks that the folders are
# writable and says how to fix them, instead of a traceback minutes into a training run.
set -eu

owner_dir="${PUFFER_OWNER_DIR:-}"
if [ -z "$owner_dir" ]; then
    if mountpoint -q /workspace 2>/dev/null; then owner_dir=/workspace; else owner_dir="${PUFFER_EXPERIMENTS:-/experiments}"; fi
fi
as_user=""  # the command prefix that drops root; empty when the container did not start as root
if [ "$(id -u)" = 0 ] && getent passwd puffer >/dev/null; then
    uid="${PUFFER_UID:-}" gid="${PUFFER_GID:-}"
    if [ -z "$uid" ] && [ -d "$owner_dir" ]; then uid="$(stat -c %u "$owner_dir")"; fi
    if [ -z "$gid" ] && [ -d "$owner_dir" ]; then gid="$(stat -c %g "$owner_dir")"; fi
    uid="${uid:-$(id -u puffer)}" gid="${gid:-$(id -g puffer)}"
    home="$(getent passwd puffer | cut -d: -f6)"
    if [ "$uid" != "$(id -u puffer)" ] || [ "$gid" != "$(id -g puffer)" ]; then
        # -o: the uid may already be taken inside the image (root's 0, Ubuntu's 1000 user).
        groupmod -o -g "$gid" puffer
        usermod -o -u "$uid" -g "$gid" puffer
        chown -R "$uid:$gid" "$home"
    fi
    for dir in "${PUFFER_EXPERIMENTS:-}" "${WANDB_DIR:-}"; do
        # Not mounted: an empty folder of the right owner inside the container.
        if [ -n "$dir" ] && [ ! -e "$dir" ]; then install -d -o "$uid" -g "$gid" "$dir"; fi
    done
    export HOME="$home" USER=puffer LOGNAME=puffer
    as_user="setpriv --reuid=$uid --regid=$gid --init-groups"
fi

for dir in "${PUFFER_EXPERIMENTS:-}" "${WANDB_DIR:-}"; do
    [ -n "$dir" ] || continue
    [ -n "$as_user" ] || mkdir -p "$dir" 2>/dev/null || true
    # shellcheck disable=SC2086  # $as_user is a command prefix: split on purpose
    if ! $as_user test -w "$dir"; then
        echo "puffer: $dir is not writable by uid ${uid:-$(id -u)}." >&2
        echo "  The container writes as the owner of $owner_dir (or PUFFER_UID/PUFFER_GID when set); on the host," >&2
        echo "  make the folders yours: sudo chown -R \$(id -u):\$(id -g) experiments wandb" >&2
        exit 1
    fi
done
# shellcheck disable=SC2086
exec $as_user "$@"
