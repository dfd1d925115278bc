#!/usr/bin/env python
"""What a saved env state costs: microseconds per get_state and set_state, and bytes per state, for every
Ocean env (default options) and every binding that saves state, plus one game's round trip through each
vector backend.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_states
    .venv/bin/python -m lab.bench_states --quick          # fewer repetitions, no doc update

Each env is made with one game, reset, stepped 64 random steps (so the state is mid-episode), then its game
is saved and loaded `--repeats` times per round; a figure is the median over rounds of each round's mean,
in wall-clock microseconds. The bindings need their extras; one whose package is missing is skipped and
named under the table. Pokémon Red needs a ROM (`--gb-rom`; any Game Boy ROM works for timing). Writes the
section "Saved env states" of docs/benchmarks.md.
"""
import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable

from lab import ROOT
from lab import benchmark as bd

DOC = os.path.join(ROOT, 'docs', 'benchmarks.md')
COMMAND = 'flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_states'
# name, the package it needs, its options
BINDINGS = [
    ('atari_pong', 'ale_py', {}),
    ('mujoco_halfcheetah', 'mujoco', {}),
    ('mujoco_humanoid', 'mujoco', {}),
    ('minigrid_doorkey', 'minigrid', {}),
    ('crafter', 'crafter', {}),
    ('procgen_coinrun', 'procgen', {}),
    ('pokemon_red', 'pyboy', {'check_rom': False}),
]


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Mean microseconds of `fn` over `repeats` calls."""
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return 1e6 * (time.perf_counter() - start) / repeats


def measure_env(name: str, kwargs: dict, repeats: int, rounds: int) -> tuple[float, float, int]:
    """(get us, set us, bytes) of game 0 of env `name`."""
    from pufferlib import registry
    from pufferlib.ocean.tools import random_actions
    env = registry.lookup(name).make(seed=0, **kwargs)
    try:
        env.reset(seed=0)
        for action in random_actions(env.single_action_space, env.num_agents, 64, seed=0):
            env.step(action)
        state = env.get_state(0)
        gets, sets = [], []
        for _ in range(rounds):
            gets.append(timed(lambda: env.get_state(0), repeats))
            sets.append(timed(lambda: env.set_state(0, state), repeats))
        return bd.median(gets), bd.median(sets), len(state)
    finally:
        env.close()


def measure_vector(backend: str, repeats: int, rounds: int) -> tuple[float, float]:
    """(get_states us, set_states us) of one game of puffer_pong through `backend` (2 envs of 2 games)."""
    import pufferlib.vector
    workers = {} if backend == 'Serial' else {'num_workers': 2}
    vec = pufferlib.vector.make('puffer_pong', backend=backend, num_envs=2, seed=0, env_kwargs={'num_envs': 2},
                                **workers)
    try:
        vec.reset(seed=0)
        [state] = vec.get_states([3])
        gets, sets = [], []
        for _ in range(rounds):
            gets.append(timed(lambda: vec.get_states([3]), repeats))
            sets.append(timed(lambda: vec.set_states([3], [state]), repeats))
        return bd.median(gets), bd.median(sets)
    finally:
        vec.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=200, help='saves and loads per round')
    parser.add_argument('--rounds', type=int, default=5, help='rounds; medians are reported')
    parser.add_argument('--gb-rom', help='a Game Boy ROM for the pokemon_red row (skipped without one)')
    parser.add_argument('--quick', action='store_true', help='20 repetitions, 1 round, no doc update')
    parser.add_argument('--no-write', action='store_true', help='print only; leave docs/benchmarks.md alone')
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.rounds, args.no_write = 20, 1, True
    if args.repeats < 1 or args.rounds < 1:
        parser.error('--repeats and --rounds must be at least 1')
    import pufferlib.ocean
    os.environ.setdefault('MUJOCO_GL', 'egl')
    rows, skipped = [], []
    targets = [(name, {}) for name in pufferlib.ocean.env_names()]
    for name, module, kwargs in BINDINGS:
        if importlib.util.find_spec(module) is None:
            skipped.append(f'{name} (no {module})')
        elif name == 'pokemon_red' and not args.gb_rom:
            skipped.append(f'{name} (no --gb-rom)')
        else:
            targets.append((name, {**kwargs, **({'rom_path': args.gb_rom} if name == 'pokemon_red' else {})}))
    for name, kwargs in targets:
        # the slow engines get fewer repetitions: their figures are milliseconds anyway
        repeats = args.repeats if name.startswith('puffer_') else max(1, args.repeats // 10)
        get_us, set_us, size = measure_env(name, kwargs, repeats, args.rounds)
        rows.append([name, f'{get_us:,.1f}', f'{set_us:,.1f}', f'{size:,}'])
        print(f'{name:<24} get {get_us:>10,.1f} us  set {set_us:>10,.1f} us  {size:>10,} bytes', flush=True)
    vector_rows = []
    for backend in ('Serial', 'Multiprocessing'):
        get_us, set_us = measure_vector(backend, max(1, args.repeats // 4), args.rounds)
        vector_rows.append([backend, f'{get_us:,.1f}', f'{set_us:,.1f}'])
        print(f'puffer_pong via {backend:<16} get_states {get_us:>8,.1f} us  set_states {set_us:>8,.1f} us', flush=True)
    text = (f'Measured by `{COMMAND}` ({bd.machine()}). One game, saved mid-episode; wall-clock microseconds per '
            f'call, the median over {args.rounds} rounds of {args.repeats} calls (a tenth of that for the '
            'bindings). A state is its 80-byte header plus the payload. Ocean envs copy their C struct, the memory '
            'c_init allocated and their rows; the bindings go through their engines (docs/vector.md, "Saving '
            'and restoring env states").\n\n'
            + bd.markdown_table(['env', 'get_state (us)', 'set_state (us)', 'bytes per state'], rows, 'lrrr')
            + ('\n\nNot measured: ' + ', '.join(skipped) + '.' if skipped else '')
            + '\n\nOne game of puffer_pong (2 env objects of 2 games) through a vector, a call for one id:\n\n'
            + bd.markdown_table(['backend', 'get_states (us)', 'set_states (us)'], vector_rows, 'lrr'))
    print(text)
    if not args.no_write:
        path = bd.update_section('states', 'Saved env states', text, DOC)
        print(f'wrote {os.path.relpath(path, ROOT)}')


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
