#!/usr/bin/env python
"""puffer web's speed: every Ocean env's WebAssembly build in Chromium against the native build of the same
C, and ocean/puffernet.h against torch for one agent step of the env's default policy.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_web
    .venv/bin/python -m lab.bench_web --quick             # one short round, no doc update
    .venv/bin/python -m lab.bench_web --only pong snake   # some envs, no doc update

Env steps: the page's glue (ocean/web/web.h) with random legal actions, one env instance, built by emcc
(-O3) and run by headless Chromium (puffer.bench in ocean/web/page.js times the module alone), and built by
the host's C compiler (-O3) and run through ctypes (one call for all the steps). Inference: one agent step
(forward pass and sampling, batch 1, one core) of the env's default policy with random weights: puffernet.h
in a small C program timed with its own clock, and torch (torch.set_num_threads(1), no_grad) as `puffer
eval` runs it. The page's load time is from the navigation to its first frame, served on 127.0.0.1.
Rounds are interleaved (WebAssembly, native, C header, torch, ...); medians, every round and the spread
are printed. Needs emcc, chromium and chromedriver (scripts/setup_web.sh) and selenium (the web extra).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

import pufferlib
from pufferlib import config as configuration
from pufferlib import export, ocean, web
from pufferlib.models import make_policy
from pufferlib.distributions import sample_logits
from pufferlib.native import c_compiler, header_path, twin_header

from lab import benchdoc
from lab import benchmark as bd

WASM_TARGET = 0.30  # WebAssembly at least 30% of native
HARNESS = r'''
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "puffernet.h"
/* argv: weights file, one observation row file, seconds; prints nanoseconds per agent step */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(*n ? *n : 1);
    if (fread(data, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return data;
}
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
    size_t nw = 0, no = 0;
    unsigned char *weights = slurp(argv[1], &nw), *obs = slurp(argv[2], &no);
    double seconds = atof(argv[3]);
    size_t bytes = puffernet_arena_bytes(weights, nw, 1);
    void *arena = aligned_alloc(16, (bytes + 15) / 16 * 16);
    const char *error = NULL;
    PufferNet *net = puffernet_load(arena, bytes, weights, nw, 1, &error);
    if (!net) { fprintf(stderr, "%s\n", error); return 1; }
    float actions[256];
    uint64_t rng = 12345;
    long long calls = 0;
    double start = now(), end = start;
    while (end - start < seconds) {
        for (int i = 0; i < 1000; i++) puffernet_act(net, 1, obs, NULL, actions, &rng);
        calls += 1000;
        end = now();
    }
    printf("%.3f\n", 1e9 * (end - start) / calls);
    return 0;
}
'''


def default_policy(name):
    """(policy, one observation row) of the env's config (its own class through its C twin where it has one),
    random weights fixed by the seed."""
    torch.manual_seed(0)
    config = configuration.load(name)
    env = pufferlib.make(name, num_envs=1, seed=0)
    try:
        policy = make_policy(env, config)
        obs, _ = env.reset(seed=0)
        return policy.eval(), np.ascontiguousarray(obs[:1])
    finally:
        env.close()


def torch_step_ns(policy, row, seconds):
    """Nanoseconds per agent step of torch at batch 1 on one core: forward and sampling."""
    tensor = torch.from_numpy(row)
    recurrent = getattr(policy, 'is_recurrent', False)
    state = policy.initial_state(1) if recurrent else None
    calls, start = 0, time.perf_counter()
    with torch.no_grad():
        while time.perf_counter() - start < seconds:
            for _ in range(100):
                logits, _ = policy.forward_eval(tensor, state) if recurrent else policy(tensor)
                sample_logits(logits)
            calls += 100
    return 1e9 * (time.perf_counter() - start) / calls


def harness(folder, twin=None):
    """The C timing program, compiled as pufferlib.native.native_library compiles the header (-O3), with the C twin
    of the policy's class where it has one (tripletriad, puffer_mmo)."""
    tag = os.path.basename(os.path.dirname(twin)) if twin else 'plain'
    source, program = os.path.join(folder, f'harness_{tag}.c'), os.path.join(folder, f'harness_{tag}')
    if os.path.exists(program):
        return program
    with open(source, 'w') as f:
        f.write(f'#define PUFFERNET_TWIN "{twin}"\n' if twin else '')
        f.write(HARNESS)
    command = [*c_compiler(), '-std=c11', '-O3', '-I', os.path.dirname(header_path()), source, '-o',
               program, '-lm']
    subprocess.run(command, check=True, capture_output=True, text=True)
    return program


def c_step_ns(program, weights_path, row_path, seconds):
    done = subprocess.run([program, weights_path, row_path, str(seconds)], capture_output=True, text=True, check=True)
    return float(done.stdout)


def build_site(names, folder):
    """One page per env with random actions (no weights: the env's own speed), emcc runs in parallel."""
    def build(name):
        meta = web.page_meta(name, {}, 'random', None, 'scripts/lab/bench_web.py')
        return web.write_page(name, os.path.join(folder, ocean.short_name(name)), meta)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(build, names))


def chromium():
    from selenium import webdriver
    options = webdriver.ChromeOptions()
    for flag in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'):
        options.add_argument(flag)
    options.binary_location = shutil.which('chromium')
    return webdriver.Chrome(service=webdriver.ChromeService(shutil.which('chromedriver')), options=options)


def open_page(driver, url):
    driver.get(url)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if driver.execute_script('return !!(window.puffer && (window.puffer.ready || window.puffer.error))'):
            break
        time.sleep(0.02)
    error = driver.execute_script('return window.puffer.error')
    if error:
        raise pufferlib.PufferError(f'{url}: {error}')
    return driver.execute_script('return window.puffer.loadedMs')


def measure_env(name, args, folder, url, driver):
    """{contender: rounds} of one env, and its page's load time."""
    short = ocean.short_name(name)
    load_ms = open_page(driver, f'{url}/{short}/index.html')
    game = web.NativeGame(name, policy='random')
    game.run(1000, 0)  # warm
    start = time.perf_counter()
    game.run(20000, 0)
    steps = max(1000, int(20000 * args.seconds / max(time.perf_counter() - start, 1e-6)))
    policy, row = default_policy(name)
    program = harness(folder, twin_header(policy))
    weights_path, row_path = os.path.join(folder, f'{short}.bin'), os.path.join(folder, f'{short}.obs')
    with open(weights_path, 'wb') as f:
        f.write(export.native_bytes(policy)[1])
    with open(row_path, 'wb') as f:
        f.write(row.tobytes())

    def wasm():
        return steps / (driver.execute_script(f'return window.puffer.bench({steps}, 1)') / 1000)

    def native():
        game.lib.web_reset(1.0)
        begin = time.perf_counter()
        game.lib.web_step(steps)
        return steps / (time.perf_counter() - begin)

    table = {'wasm': wasm, 'native': native,
             'c_ns': lambda: c_step_ns(program, weights_path, row_path, args.seconds / 2),
             'torch_ns': lambda: torch_step_ns(policy, row, args.seconds / 2)}
    runs = bd.interleaved(list(table), args.repeats, lambda label: table[label]())
    runs['load_ms'] = [load_ms]
    return runs


def measure(names, args, folder, url, driver):
    results = {}
    for name in names:
        runs = results[name] = measure_env(name, args, folder, url, driver)
        print(f'  {name:<20} wasm {bd.si(bd.median(runs["wasm"]))}  native {bd.si(bd.median(runs["native"]))}  '
              f'C {bd.median(runs["c_ns"]) / 1000:.2f} us  torch {bd.median(runs["torch_ns"]) / 1000:.1f} us  '
              f'load {runs["load_ms"][0]:.0f} ms', file=sys.stderr, flush=True)
    return results


def section(results, args):
    rows = []
    for name, runs in results.items():
        share = bd.ratio(runs['wasm'], runs['native'])
        speedup = bd.ratio(runs['torch_ns'], runs['c_ns'])
        rows.append([name, bd.si(bd.median(runs['wasm'])), bd.si(bd.median(runs['native'])),
                     bd.ratio_cell(share, bold_below=WASM_TARGET), bd.spread_cell(runs['wasm']),
                     f'{bd.median(runs["c_ns"]) / 1000:.2f}', f'{bd.median(runs["torch_ns"]) / 1000:.1f}',
                     bd.ratio_cell(speedup, bold_below=1.0), f'{runs["load_ms"][0]:.0f}'])
    shares = [bd.ratio(r['wasm'], r['native']) for r in results.values()]
    speedups = [bd.ratio(r['torch_ns'], r['c_ns']) for r in results.values()]
    slow = [n for n, s in zip(results, shares) if s is not None and s < WASM_TARGET]
    lines = [f'Measured {bd.machine([f"torch {torch.__version__}", _chromium_version()])}; a shared machine '
             f'with other work running, so the figures are noisy (see the spread). {args.repeats} interleaved '
             f'rounds of about {args.seconds:g} s per contender.',
             '', '    ' + ' '.join(['.venv/bin/python -m lab.bench_web', *sys.argv[1:]]), '',
             bd.markdown_table(['env', 'WASM steps/s', 'native steps/s', 'WASM / native', 'WASM spread',
                                'puffernet.h us/step', 'torch us/step', 'torch / C', 'page load ms'], rows,
                               'lrrrrrrrr'),
             '',
             f'Env steps: one env instance, random legal actions, the same C (ocean/web/web.h) built by emcc -O3 '
             f'for Chromium and by {" ".join(c_compiler())} -O3 here. Target: WebAssembly at least '
             f'{WASM_TARGET:.0%} of native (bold below it); '
             f'{"every env meets it" if not slow else "below it: " + ", ".join(slow)}'
             f' (lowest {min((s for s in shares if s is not None), default=0):.2f}x). Inference: one agent step '
             f'(forward and sampling, batch 1, one core) of the env\'s default policy; the C header meets its '
             f'target (at least as fast as torch) on {sum(1 for s in speedups if s and s >= 1)} of {len(speedups)}'
             f' envs (lowest {min((s for s in speedups if s is not None), default=0):.1f}x). Page load: '
             'navigation to the first frame, from 127.0.0.1.']
    return '\n'.join(lines)


def _chromium_version():
    try:
        return subprocess.run(['chromium', '--version'], capture_output=True, text=True, timeout=60).stdout.strip()
    except OSError:
        return 'chromium'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.common_arguments(parser, seconds=0.5, repeats=3, quick_seconds=0.1)
    parser.add_argument('--only', nargs='*', help='measure only these envs (bare names); implies --no-write')
    args = bd.parse(parser, argv)
    names = [ocean.PREFIX + n for n in ocean.ENVS if not args.only or n in args.only]
    if args.only and len(names) != len(args.only):
        parser.error(f'unknown env in --only {args.only}; Ocean envs: {", ".join(ocean.ENVS)}')
    missing = [tool for tool in ('emcc', 'chromium', 'chromedriver') if shutil.which(tool) is None]
    if missing:
        raise pufferlib.PufferError(f'{", ".join(missing)} missing: run scripts/setup_web.sh')
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix='bench-web-') as folder:
        print(f'building {len(names)} pages ...', file=sys.stderr, flush=True)
        build_site(names, folder)
        httpd, thread = web.serve_in_thread(folder)
        driver = chromium()
        try:
            results = measure(names, args, folder, f'http://127.0.0.1:{httpd.server_address[1]}', driver)
        finally:
            driver.quit()
            httpd.shutdown()
            httpd.server_close()
            thread.join(30)
    text = section(results, args)
    print(text)
    if not args.no_write and not args.only:
        path = bd.update_section('web', 'puffer web: WebAssembly and the C inference header', text, benchdoc.DOC)
        print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
