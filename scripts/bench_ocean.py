#!/usr/bin/env python
"""Ocean throughput: agent steps per second of every Ocean env on one core, ours and PufferLib 3.0's.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python scripts/bench_ocean.py [--anchor DIR]
    .venv/bin/python scripts/bench_ocean.py --quick            # one short round, no doc update
    .venv/bin/python scripts/bench_ocean.py --only snake pong  # some envs, no doc update

Each env runs as one vectorized object of about 4096 agent rows in one process, stepped with random
actions drawn ahead of time (pufferlib.ocean.tools.bench), so the figure is the env's own speed.
PufferLib 3.0's counterpart (PEERS) runs the same loop over the same number of rows in the anchor's
venv (scripts/bench_anchor.py), at its own defaults and, where they differ, at settings that
match ours. Gymnasium's CartPole-v1 (Python, one env) is the third peer. Rounds are interleaved
(ours, 3.0 defaults, 3.0 matched, ours, ...); medians, every round and the spread are printed.
"""
import argparse
import os
import sys
import time

import gymnasium
import numpy as np

from pufferlib import ocean
from pufferlib.ocean import tools

import benchdoc
from pufferlib import benchmark as bd

# Our env -> (its PufferLib 3.0 counterpart, 3.0 settings that match ours or None where its
# defaults already do, what still differs). One line per env; envs without one have no peer.
PEERS = {
    'squared': ('puffer_squared', None, ''),
    'cartpole': ('puffer_cartpole', None, ''),
    'pong': ('puffer_pong', {'frameskip': 4}, ''),
    'breakout': ('puffer_breakout', None, ''),
    'snake': ('puffer_snake', {'width': 64, 'height': 64, 'num_snakes': 16, 'num_food': 64, 'vision': 5,
                               'max_snake_length': 64}, ''),
    'connect4': ('puffer_connect4', None, "3.0's opponent searches 3 plies (negamax), ours looks 1 ahead"),
    'enduro': ('puffer_enduro', None, "3.0 observes a list of up to 10 cars, ours per-lane summaries"),
    'tetris': ('puffer_tetris', {'deck_size': 2}, "3.0 plays one move per step, ours one placement (a whole "
               "piece) per step"),
    'rware': ('puffer_rware', None, "both the paper's tiny warehouse with 4 robots and 4 requests"),
    'go': ('puffer_go', None, 'both 7x7 against a built-in player; rules, observations and opponents differ'),
    'tripletriad': ('puffer_tripletriad', None, "both one agent row per env, 4096 envs, agent steps counted; "
                    "3.0 picks a card, then a cell (14 actions, half a move per step); ours a pair (45), the "
                    "scripted reply in the same step, and one-ply hints"),
    'trash_pickup': ('puffer_trash_pickup', None, ''),
}
SANITY_TARGET, GAME_TARGET = 10e6, 2e6
# Issue 16's targets for the second-wave games (go at 7x7, the default), a little above the public
# suite's figures on this machine kind: go 563k, tripletriad 3.53M, trash_pickup 1.37M, enduro 1.54M,
# tetris 2.80M, rware 12.04M (agent steps/s).
TARGETS = {'go': 0.6e6, 'tripletriad': 3.6e6, 'trash_pickup': 1.4e6,
           'enduro': 1.6e6, 'tetris': 3e6, 'rware': 12e6}


def target(name):
    if name in TARGETS:
        return 'game', TARGETS[name]
    if name in ocean.SANITY:
        return 'sanity', SANITY_TARGET
    return ('classic' if name == 'cartpole' else 'game'), GAME_TARGET


def gymnasium_cartpole(seconds):
    """Gymnasium's Python CartPole-v1, one env on one core, the same pre-drawn actions."""
    env = gymnasium.make('CartPole-v1')
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, 256).tolist()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        steps += len(actions)
    return steps / (time.perf_counter() - start)


def contenders(name, anchor):
    """(label, measure(seconds)) for one env: ours first, then its peers."""
    out = [('ours', lambda s: tools.bench(name, seconds=s))]
    if anchor and name in PEERS:
        peer, matched, _ = PEERS[name]
        out.append(('3.0 defaults', lambda s: anchor.ask('ocean', env=peer, kwargs={}, rows=tools.BENCH_ROWS,
                                                          seconds=s)['sps']))
        if matched:
            out.append(('3.0 matched', lambda s: anchor.ask('ocean', env=peer, kwargs=matched,
                                                             rows=tools.BENCH_ROWS, seconds=s)['sps']))
    if name == 'cartpole':
        out.append(('Gymnasium CartPole-v1', gymnasium_cartpole))
    return out


def measure(names, args, anchor):
    results = {}
    for name in names:
        table = dict(contenders(name, anchor))
        results[name] = bd.interleaved(list(table), args.repeats, lambda label, table=table: table[label](args.seconds))
        line = '  '.join(f'{label} {bd.si(bd.median(runs))}' for label, runs in results[name].items())
        print(f'  {name:<12} {line}', file=sys.stderr, flush=True)
    return results


def render(results, args, note, about):
    mega = lambda v: f'{v / 1e6:.1f}' if v >= 1e6 else f'{v / 1e6:.3f}'  # noqa: E731
    m = lambda runs: mega(bd.median(runs))  # noqa: E731
    mruns = lambda runs: bd.runs_cell(runs, mega)  # noqa: E731
    rows = []
    for name, runs in results.items():
        kind, goal = target(name)
        ours = runs['ours']
        rows.append([f'puffer_{name}', kind, m(ours), mruns(ours), bd.spread_cell(ours), f'{goal / 1e6:g}',
                     'yes' if bd.median(ours) >= goal else '**no**'])
    versions = [f'PufferLib 3.0 = pufferlib {about["pufferlib"]} (anchor build), numpy {about["numpy"]} there'] \
        if about else []
    text = [f'Measured by `scripts/bench_ocean.py`: {bd.machine(versions)}. One env object of about '
            f'{tools.BENCH_ROWS} agent rows in one process, random actions; median of {args.repeats} interleaved '
            f'rounds of {args.seconds:g} s. Spread = (max - min) / median over the rounds: the run-to-run noise. '
            'Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python scripts/bench_ocean.py '
            '--anchor DIR`.', '',
            bd.markdown_table(['env', 'kind', 'ours (M steps/s)', 'rounds', 'spread', 'target (M/s)', 'meets'], rows,
                              'llrrrrl')]
    head = []
    for name, runs in results.items():
        if len(runs) < 2:
            continue
        peer, matched, differs = PEERS.get(name, (None, None, ''))
        for label in [k for k in runs if k != 'ours']:
            settings = ('Gymnasium, Python, one env' if label.startswith('Gymnasium') else
                        ', '.join(f'{k}={v}' for k, v in matched.items()) if label == '3.0 matched' else
                        'its defaults' + (f' ({differs})' if differs else ''))
            who = label if label.startswith('Gymnasium') else f'PufferLib 3.0 `{peer}`'
            head.append([f'puffer_{name}', who, settings, m(runs['ours']), m(runs[label]), mruns(runs[label]),
                         bd.spread_cell(runs[label]), bd.ratio_cell(bd.ratio(runs['ours'], runs[label]), 1.0)])
    text += ['', 'Head to head, measured in the same rounds as the table above (ours / peer: ratio of medians). '
             'Our envs are our own designs: where the defaults of 3.0 differ from ours in a setting both have '
             '(frameskip, arena, counts), a second row sets 3.0 to ours. Observation sizes match (pong 8, '
             'breakout 114 vs 118, squared and '
             'snake 121 cells, connect4 42); rules and rendering code differ, so these compare like tasks, not '
             'identical code.', '']
    if head:
        text.append(bd.markdown_table(['env', 'peer', 'peer settings', 'ours (M/s)', 'peer (M/s)', 'peer rounds',
                                       'peer spread', 'ours / peer'], head, 'lllrrrrr'))
    if note:
        text += ['', f'*{note}.*']
    return '\n'.join(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.common_arguments(parser, seconds=1.0, repeats=5, quick_seconds=0.3)
    parser.add_argument('--only', nargs='*', help='measure only these envs (bare names); implies --no-write')
    args = bd.parse(parser, argv)
    names = [n for n in ocean.ENVS if not args.only or n in args.only]
    if args.only and len(names) != len(args.only):
        parser.error(f'unknown env in --only {args.only}; Ocean envs: {", ".join(ocean.ENVS)}')
    python, note = bd.find_anchor(args.anchor)
    anchor = bd.PeerProcess(python, benchdoc.ANCHOR_SCRIPT) if python else None
    try:
        results = measure(names, args, anchor)
    finally:
        if anchor:
            anchor.close()
    text = render(results, args, note, anchor.about if anchor else None)
    print(text)
    if not args.no_write and not args.only:
        path = bd.update_section('ocean', 'Ocean environments', text, benchdoc.DOC)
        print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
