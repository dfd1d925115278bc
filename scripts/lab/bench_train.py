#!/usr/bin/env python
"""Training speed on this machine's CPU: ours vs PufferLib 3.0, SB3 PPO and CleanRL's ppo.py.

    flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python -m lab.bench_train --anchor DIR --cleanrl DIR
    .venv/bin/python -m lab.bench_train --quick          # one short round, no doc update

Three tables, every contender measured in the same interleaved rounds:
1. Ocean: agent steps per second of the whole training loop (rollout + update), each run for
   --seconds from its first rollout (start-up excluded, alike for every side). Ours without and
   with the LSTM; PufferLib 3.0 with its LSTM (its default) and without, at its own defaults and at
   our shape (rows, horizon, minibatch, env sizes).
2. CartPole-v1 steps per second: ours, SB3 PPO and CleanRL's ppo.py, each at its defaults and at
   our rollout/update shape.
3. CartPole-v1 seconds to a mean episode return of 475, each side at its defaults.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch

from pufferlib import config as configuration
from pufferlib import train as training

from lab import benchdoc
from lab import benchmark as bd

# Ocean envs trained here, one line each: 3.0's name is the same.
OCEAN = ['puffer_squared', 'puffer_breakout', 'puffer_pong', 'puffer_snake']
LSTM = ['--rnn.class', 'pufferlib.models:LSTMWrapper']
TARGET = 475.0
WINDOW_S, SOLVE_EPISODES = bd.WINDOW_S, bd.SOLVE_EPISODES


def experiments():
    return os.environ.setdefault('PUFFER_EXPERIMENTS', os.path.join(tempfile.gettempdir(), 'puffer-bench-train'))


def ours(env, flags, seconds, target=None):
    """Our trainer for `seconds` from its first rollout: {'sps', 'solved_s' (with a target)}."""
    config = configuration.load(env, ['--train.log-interval', str(WINDOW_S if target else 0.5),
                                      '--train.checkpoint-interval', '1000000', '--train.device', 'cpu', *flags])
    result, windows = {}, []

    def on_log(row):
        result['sps'] = row['sps']
        if target is not None and row.get('env/episodes'):
            windows.append((row['elapsed_s'], row['env/episode_return'] * row['env/episodes'], row['env/episodes']))
            if bd.solved_at(windows, target) is not None:
                result['solved_s'] = row['elapsed_s']
                return True
        return row['elapsed_s'] >= seconds
    summary = training.train(env, config=config, quiet=True, on_log=on_log)
    shutil.rmtree(summary['run_dir'], ignore_errors=True)
    return result


# ---------------------------------------------------------------------------------------------
# SB3 PPO (in this process) and CleanRL's ppo.py (its own venv, as its users run it)
# ---------------------------------------------------------------------------------------------

SB3_OUR_SHAPE = dict(n_envs=8, n_steps=64, batch_size=128, n_epochs=4)


def sb3(seconds, shape=None, target=None, seed=0):
    """SB3 PPO on CartPole-v1 (its defaults, or `shape`) for `seconds` from the start of learn()."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    shape = dict(shape or {})
    envs = make_vec_env('CartPole-v1', n_envs=shape.pop('n_envs', 1), seed=seed)
    model = PPO('MlpPolicy', envs, device='cpu', seed=seed, verbose=0, **shape)
    events, start = [], [0.0]

    class Stop(BaseCallback):
        def _on_training_start(self):
            start[0] = time.perf_counter()

        def _on_step(self):
            now, ended = time.perf_counter() - start[0], len(events)
            for info in self.locals['infos']:
                if 'episode' in info:
                    events.append((now, info['episode']['r']))
            if target is not None and len(events) > ended and bd.time_to_target(events, target) is not None:
                return False
            return now < seconds
    model.learn(total_timesteps=10**9, callback=Stop())
    elapsed = time.perf_counter() - start[0]
    envs.close()
    return {'sps': model.num_timesteps / elapsed, 'solved_s': bd.time_to_target(events, target) if target else None}


CLEANRL_OUR_SHAPE = ['--num-envs', '8', '--num-steps', '64', '--num-minibatches', '4', '--update-epochs', '4']


def cleanrl(peer, seconds, flags=(), target=None, seed=1, runner=()):
    """`python cleanrl/ppo.py` in its own venv, stopped after `seconds` from its first output line. `runner`:
    interpreter arguments before the script (lab.bench_atari starts ppo_atari.py through one).

    Steps per second are its own (its last `SPS:` line: steps since its start / time since its
    start); episode returns come from its `episodic_return` lines, timed as they arrive.
    """
    python, script = peer
    scratch = tempfile.mkdtemp(prefix='puffer-cleanrl-')  # it writes runs/ (tensorboard) into its cwd
    env = bd.peer_environ(PYTHONUNBUFFERED='1')  # its prints reach us as they happen
    proc = subprocess.Popen([python, *runner, script, '--seed', str(seed), *flags], cwd=scratch, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    events, sps, start, tail = [], None, None, []
    try:
        for line in proc.stdout:
            now = time.perf_counter()
            start = start or now
            tail = (tail + [line])[-20:]
            if line.startswith('SPS:'):
                sps = float(line.split()[1])
            elif 'episodic_return=' in line:
                events.append((now - start, float(line.split('episodic_return=')[1].strip(' []\n'))))
                if target is not None and bd.time_to_target(events, target) is not None:
                    break
            if now - start >= seconds and (sps is not None or target is not None):
                break  # (a steps/s figure needs one finished iteration, however slow the machine)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    if sps is None and target is None:
        raise bd.PeerError(f'CleanRL printed no SPS line (exit {proc.returncode}); its last output:\n{"".join(tail)}')
    return {'sps': sps, 'solved_s': bd.time_to_target(events, target) if target else None}


# ---------------------------------------------------------------------------------------------
# The three tables
# ---------------------------------------------------------------------------------------------

def anchor_flags(anchor, env, flags, notes, env_kwargs=None):
    """3.0's flags as given, or with --vec.num-workers N when its defaults refuse this machine's N cores."""
    flags = ['--train.device', 'cpu', *flags]  # its default device is cuda
    try:
        anchor.ask('train', env=env, flags=flags, seconds=0, env_kwargs=env_kwargs)
        return flags
    except bd.PeerError as exc:
        if 'num_workers' not in str(exc) or '--vec.num-workers' in flags:
            raise
        cores = os.cpu_count() or 1
        reason = str(exc).split('APIUsageError: ', 1)[-1].split('.')[0]
        notes.append(f'PufferLib 3.0\'s default config for {env} refuses to start on {cores} cores ({reason}); '
                     f'its "defaults" rows ran with `--vec.num-workers {cores}`')
        flags = [*flags, '--vec.num-workers', str(cores)]
        anchor.ask('train', env=env, flags=flags, seconds=0, env_kwargs=env_kwargs)
        return flags


def ocean_table(args, anchor, notes):
    rows = []
    for env in OCEAN:
        contenders = {'ours, no LSTM (default)': lambda s, env=env: ours(env, [], s)['sps'],
                      'ours, LSTM': lambda s, env=env: ours(env, LSTM, s)['sps']}
        setups = ()
        if anchor:
            shape, sizes = bd.our_shape(env)
            try:
                setups = (('3.0 defaults', anchor_flags(anchor, env, [], notes), {}),
                          ('3.0 at our shape', anchor_flags(anchor, env, shape, notes, sizes), sizes))
            except bd.PeerError as exc:  # one env 3.0 cannot run should not cost the rest of a sitting
                notes.append(f'PufferLib 3.0 could not train {env}: {str(exc).splitlines()[0]}')
            for label, flags, kwargs in setups:
                for rnn in (True, False):
                    name = f'{label}, {"LSTM (its default)" if rnn else "no LSTM"}'
                    contenders[name] = (lambda s, env=env, flags=flags, rnn=rnn, kwargs=kwargs: anchor.ask(
                        'train', env=env, flags=flags, seconds=s, rnn=rnn, env_kwargs=kwargs)['sps'])
        failed = {}

        def measure(name, contenders=contenders, failed=failed, env=env):
            # A configuration 3.0 cannot run (e.g. a policy that only works inside its LSTM wrapper)
            # loses its own row, said in the notes, not the sitting.
            if name in failed:
                return float('nan')
            try:
                return contenders[name](args.seconds)
            except bd.PeerError as exc:
                failed[name] = str(exc).rsplit(': ', 2)[-2:]
                notes.append(f'{env}, {name}: PufferLib 3.0 failed ({": ".join(failed[name])}); not measured')
                return float('nan')
        runs = bd.interleaved(list(contenders), args.repeats, measure,
                              progress=lambda line, env=env: print(f'{env} {line}', file=sys.stderr, flush=True))
        base = {True: runs['ours, LSTM'], False: runs['ours, no LSTM (default)']}
        for name, r in runs.items():
            if name in failed:
                rows.append([env, name, 'failed (see the notes)', '-', '-', '-'])
                continue
            lstm = 'no LSTM' not in name
            rows.append([env, name, f'{bd.median(r):,.0f}', bd.runs_cell(r), bd.spread_cell(r),
                         '-' if name.startswith('ours') else bd.ratio_cell(bd.ratio(base[lstm], r), 1.0)])
        if setups:
            notes.append(f'{env} "at our shape" passes 3.0 `{" ".join(shape)}`'
                         + (f' and sets its [env] {sizes}' if sizes else ''))
    return rows


def cartpole_contenders(cleanrl_peer, target=None):
    """name -> measure(seconds, seed); defaults for every side, plus our shape for the throughput table."""
    out = {'ours (its CartPole-v1 config)': lambda s, seed: ours('CartPole-v1', ['--train.seed', str(seed)], s,
                                                                  target=target)}
    out['SB3 PPO defaults'] = lambda s, seed: sb3(s, target=target, seed=seed)
    if target is None:
        out['SB3 PPO at our shape'] = lambda s, seed: sb3(s, SB3_OUR_SHAPE, seed=seed)
    if cleanrl_peer:
        out['CleanRL ppo.py defaults'] = lambda s, seed: cleanrl(cleanrl_peer, s, target=target, seed=seed + 1)
        if target is None:
            out['CleanRL ppo.py at our shape'] = lambda s, seed: cleanrl(cleanrl_peer, s, CLEANRL_OUR_SHAPE,
                                                                         seed=seed + 1)
    return out


def cartpole_tables(args, cleanrl_peer):
    contenders = cartpole_contenders(cleanrl_peer)
    runs = bd.interleaved(list(contenders), args.repeats,
                          lambda name: contenders[name](args.seconds, 0)['sps'],
                          progress=lambda line: print(f'CartPole-v1 {line}', file=sys.stderr, flush=True))
    ours_runs = runs['ours (its CartPole-v1 config)']
    speed = [['CartPole-v1', name, f'{bd.median(r):,.0f}', bd.runs_cell(r), bd.spread_cell(r),
              '-' if name.startswith('ours') else bd.ratio_cell(bd.ratio(ours_runs, r), 1.0)]
             for name, r in runs.items()]

    solvers = cartpole_contenders(cleanrl_peer, target=TARGET)
    seeds = {}

    def solve(name):
        seed = seeds[name] = seeds.get(name, -1) + 1  # round r uses seed r for every side
        value = solvers[name](args.solve_seconds, seed).get('solved_s')
        return float('inf') if value is None else value
    times = bd.interleaved(list(solvers), args.repeats, solve,
                           progress=lambda line: print(f'CartPole-v1 to {TARGET:g}: {line}', file=sys.stderr,
                                                       flush=True))
    solve_rows = bd.solve_table(times, args.solve_seconds, 'ours (its CartPole-v1 config)', 'CartPole-v1')
    return speed, solve_rows


def render(ocean_rows, speed_rows, solve_rows, args, notes, about):
    versions = [f'torch {torch.__version__} ({torch.get_num_threads()} threads)']
    if about:
        versions.append(f'PufferLib 3.0 = pufferlib {about["pufferlib"]} (anchor build, torch {about["torch"]})')
    head = ['env', 'trainer', 'steps/s', 'rounds', 'spread', 'ours / this']
    text = [f'Measured by `scripts/lab/bench_train.py`: {bd.machine(versions)}. CPU only. Each training run lasts '
            f'{args.seconds:g} s from its first rollout (start-up excluded for every side) and reports the agent steps '
            f'per second of its rollout + update loop; median of {args.repeats} interleaved rounds; spread = '
            '(max - min) / median. "ours / this" compares like with like: ours without the LSTM against runs without '
            'one, ours with the LSTM against runs with one. Reproduce: `flock /tmp/puffer-bench.lock nice -n 5 '
            '.venv/bin/python -m lab.bench_train --anchor DIR --cleanrl DIR`.']
    if ocean_rows:
        text += ['', bd.markdown_table(head, ocean_rows, 'llrrrr')]
    text += ['', 'CartPole-v1 (Gymnasium), the same loop timing. SB3 PPO runs in this process; CleanRL\'s `ppo.py` '
             'runs from its own checkout in its own venv, as its users run it, and its figure is the `SPS:` it '
             f'prints. Our shape = 8 envs, 64-step rollouts, 4 epochs of 128-sample minibatches '
             f'(SB3 `{SB3_OUR_SHAPE}`, CleanRL `{" ".join(CLEANRL_OUR_SHAPE)}`); networks stay each side\'s default '
             '(ours: 128-wide encoder; SB3 and CleanRL: 64x64 MLPs).', '',
             bd.markdown_table(head, speed_rows, 'llrrrr'), '',
             f'Seconds to solve CartPole-v1, each side at its defaults: from the first rollout until the mean return '
             f'of the latest episodes, at least {SOLVE_EPISODES} of them (pooled in {WINDOW_S:g}-second windows, the '
             f'same rule for every side), reaches {TARGET:g}; round r uses seed '
             f'r on every side; a run stops unsolved after {args.solve_seconds:g} s. Here the ratio is this / ours '
             '(how many times longer it took).', '',
             bd.markdown_table(['env', 'trainer', 'seconds to 475', 'rounds', 'spread', 'this / ours'], solve_rows,
                               'llrrrr')]
    if notes:
        text += [''] + [f'- {note}.' for note in notes]
    return '\n'.join(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.common_arguments(parser, seconds=10.0, repeats=3, quick_seconds=3.0)
    parser.add_argument('--cleanrl', help="CleanRL checkout with its venv (default: $CLEANRL_DIR)")
    parser.add_argument('--solve-seconds', type=float, default=120.0, help='give up on 475 after this long')
    parser.add_argument('--skip-ocean', action='store_true', help='CartPole tables only (no doc update)')
    args = bd.parse(parser, argv)
    if args.quick:
        args.solve_seconds = min(args.solve_seconds, 20.0)
    if args.skip_ocean:
        args.no_write = True
    experiments()
    notes = []
    python, note = bd.find_anchor(args.anchor)
    peer, cleanrl_note = bd.find_cleanrl(args.cleanrl)
    notes += [n for n in (note, cleanrl_note) if n]
    anchor = bd.PeerProcess(python, benchdoc.ANCHOR) if python else None
    try:
        ocean_rows = [] if args.skip_ocean else ocean_table(args, anchor, notes)
    finally:
        if anchor:
            anchor.close()
    speed_rows, solve_rows = cartpole_tables(args, peer)
    text = render(ocean_rows, speed_rows, solve_rows, args, notes, anchor.about if anchor else None)
    print(text)
    if not args.no_write:
        path = bd.update_section('training', 'Training throughput', text, benchdoc.DOC)
        print(f'\nwrote {os.path.relpath(path, benchdoc.ROOT)}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
