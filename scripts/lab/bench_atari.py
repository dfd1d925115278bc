#!/usr/bin/env python
"""Atari training speed on this machine: the default Atari config, the former one and CleanRL's ppo_atari.py.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_atari --cleanrl DIR
    .venv/bin/python -m lab.bench_atari --quick          # one short round, no doc update

Pong (`atari_pong`, CleanRL's PongNoFrameskip-v4), CPU only, agent steps per second of the whole training
loop (rollout + update), every contender measured in the same interleaved rounds:
- ours, the default: `puffer train atari_pong` as committed (pufferlib/config/atari.toml: CleanRL's recipe, the
  Nature CNN without memory, the envs and pool sized for this machine by pufferlib.cpus);
- ours, the former default: the Nature CNN + an LSTM 512 under Muon, 16 envs in a pool of 8, one epoch of
  whole-segment minibatches (FORMER below: that config's keys as flags over today's file);
- CleanRL's ppo_atari.py at its defaults (8 envs in one process, 128 steps, 4 epochs of 4 minibatches), from
  its own checkout in its own venv, started through RUNNER (see below); its figure is the `SPS:` it prints.
Each of ours runs --seconds from its first rollout, and at least one epoch (the former default's epoch can
take longer than that here); CleanRL runs --seconds from its first output line, and at least one iteration.
"""
import argparse
import os
import sys

import torch

from lab import bench_train, benchdoc
from lab import benchmark as bd

ENV = 'atari_pong'
CLEANRL_ENV = 'PongNoFrameskip-v4'
# The former default (pufferlib/config/atari.toml before CleanRL's recipe), every key that differs from today's.
FORMER = ['--env.fire-reset', 'false', '--vec.num-envs', '16', '--vec.num-workers', 'auto', '--vec.batch-size', '8',
          '--train.bptt-horizon', '64', '--train.minibatch-size', '1024', '--train.minibatch-sampling', 'segments',
          '--train.update-epochs', '1', '--train.optimizer', 'muon', '--train.learning-rate', '0.0025',
          '--train.lr-schedule', 'cosine', '--train.adam-beta1', '0.95', '--train.adam-eps', '1e-12',
          '--train.clip-coef', '0.2', '--train.vf-clip-coef', '0.2', '--train.prio-alpha', '0.8',
          '--train.prio-beta0', '0.2', '--rnn.class', 'pufferlib.models:LSTMWrapper', '--rnn.input-size', '512',
          '--rnn.hidden-size', '512']
# ale-py 0.9 registers the NoFrameskip-v4 envs when it is imported, where 0.8 (CleanRL's pin) did it through
# gymnasium's plugin hook, and ppo_atari.py never imports it: the script runs as __main__ after that import.
RUNNER = ('-c', 'import runpy, sys, ale_py; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")')
CONTENDERS = {'default': 'ours, default (CleanRL recipe, auto sizes)', 'former': 'ours, former default (LSTM, Muon)',
              'cleanrl': 'CleanRL ppo_atari.py'}


def measure(name, seconds, peer):
    if name == 'cleanrl':
        return bench_train.cleanrl(peer, seconds, ['--env-id', CLEANRL_ENV, '--no-cuda'], runner=RUNNER)['sps']
    return bench_train.ours(ENV, FORMER if name == 'former' else [], seconds)['sps']


def render(runs, args, notes):
    rows = [[CONTENDERS[name], bd.si(bd.median(values)), bd.runs_cell(values), bd.spread_cell(values),
             bd.ratio_cell(bd.ratio(runs['default'], values))] for name, values in runs.items()]
    versions = [f'torch {torch.__version__} ({torch.get_num_threads()} threads)']
    text = [f'Measured by `scripts/lab/bench_atari.py`: {bd.machine(versions)}. CPU only, {ENV} '
            f'({CLEANRL_ENV} for CleanRL). Agent steps per second of the rollout + update loop, each run '
            f'{args.seconds:g} s and at least one epoch; median of {args.repeats} interleaved rounds; spread = '
            f'(max - min) / median; load average (5 min) at the end {os.getloadavg()[1]:.1f} on '
            f'{os.cpu_count()} cores (other programs share this machine). CleanRL\'s figure is its own `SPS:` (from '
            'its start, env creation included). '
            'Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_atari --cleanrl DIR`.',
            '', bd.markdown_table(['trainer', 'steps/s', 'rounds', 'spread', 'default / this'], rows, 'lrrrr')]
    text += ['', 'The CleanRL venv is its pinned requirements but for ale-py: 0.9.1 (the ROMs in its wheel) for '
             '0.8.1, whose ROMs AutoROM downloads at install time, which an offline machine cannot; 0.9 registers '
             'the v4 envs on `import ale_py`, so ppo_atari.py starts through a one-line runner that imports it first.']
    if notes:
        text += [''] + [f'- {note}.' for note in notes]
    return '\n'.join(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.common_arguments(parser, seconds=60.0, repeats=3, quick_seconds=10.0)
    parser.add_argument('--cleanrl', help='CleanRL checkout with its venv (default: $CLEANRL_DIR)')
    args = bd.parse(parser, argv)
    bench_train.experiments()
    peer, note = bd.find_cleanrl(args.cleanrl, 'ppo_atari.py')
    names = [name for name in CONTENDERS if name != 'cleanrl' or peer]
    runs = bd.interleaved(names, args.repeats, lambda name: measure(name, args.seconds, peer),
                          progress=lambda line: print(line, file=sys.stderr, flush=True))
    text = render(runs, args, [note] if note else [])
    print(text)
    if not args.no_write:
        path = bd.update_section('atari', 'Atari training (CPU)', text, benchdoc.DOC)
        print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
