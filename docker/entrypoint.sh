#!/bin/sh
# Image entrypoint: fail early, with the fix, when a mounted output directory is not writable by
# the container user (the usual cause: the host folder was created by root, or the image was
# built for another uid), instead of a traceback minutes into a training run.
set -eu
for dir in "${PUFFER_EXPERIMENTS:-}" "${WANDB_DIR:-}"; do
    [ -n "$dir" ] || continue
    mkdir -p "$dir" 2>/dev/null || true
    if [ ! -w "$dir" ]; then
        echo "puffer: $dir is not writable by uid $(id -u) ($(id -un 2>/dev/null || echo unknown))." >&2
        echo "  On the host: mkdir -p experiments wandb && sudo chown -R $(id -u):$(id -g) experiments wandb" >&2
        echo "  or rebuild for your uid: PUFFER_UID=\$(id -u) PUFFER_GID=\$(id -g) scripts/build_images.sh" >&2
        exit 1
    fi
done
exec "$@"
