#!/usr/bin/env bash
# The system packages puffer web's browser tests and scripts/lab/bench_web.py need: emscripten (emcc),
# chromium and chromium-driver (chromedriver), all from Debian's repositories. Installs the missing ones
# when apt-get can (root, or passwordless sudo); changes nothing when all are present.
# Exit 0: all present. Exit 1: one is missing and could not be installed (the last line says why).
set -uo pipefail

need=()
command -v emcc >/dev/null || need+=(emscripten)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
if [ ${#need[@]} -eq 0 ]; then
    echo "setup_web: emscripten, chromium and chromium-driver present"
    exit 0
fi

sudo=()
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
        echo "setup_web: ${need[*]} missing, and installing them needs root: sudo apt-get install ${need[*]}"
        exit 1
    fi
fi
if ! command -v apt-get >/dev/null; then
    echo "setup_web: ${need[*]} missing, and this system has no apt-get: install them with its package manager"
    exit 1
fi
log="$(mktemp /tmp/puffer-setup-web.XXXXXX.log)"
if ! { "${sudo[@]}" apt-get update && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
    tail -5 "$log" | sed 's/^/    /'
    echo "setup_web: apt-get install ${need[*]} failed (details: $log)"
    exit 1
fi
rm -f "$log"
echo "setup_web: installed ${need[*]}"
