"""`puffer bench ENV` and `puffer play ENV`: throughput and a look at an Ocean env in the terminal.

bench: one process, one core, random actions drawn ahead of time (a pool of action rows cycled
through), so the figure is the env's own speed: agent steps per second over the whole vectorized
env. play: a random (or, where one exists, scripted) agent, drawn as text frame by frame.
"""
import sys
import time

import numpy as np
from gymnasium import spaces

from pufferlib.pufferenv import APIUsageError

# Rows per vectorized env when benchmarking: enough that the one Python call per step is noise.
BENCH_ROWS = 4096
ACTION_POOL = 64


def random_actions(space, num_agents, count, seed=0):
    """`count` rows of random actions for `num_agents` agents, int32 like the action buffer."""
    rng = np.random.default_rng(seed)
    if isinstance(space, spaces.Discrete):
        return rng.integers(0, space.n, size=(count, num_agents), dtype=np.int32)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, size=(count, num_agents, *space.nvec.shape), dtype=np.int32)
    raise APIUsageError(f'random_actions: unsupported action space {space}')


def bench(name, seconds=2.0, num_envs=None, seed=0, **config):
    """Agent steps per second of Ocean env `name` with random actions, on this core."""
    from pufferlib import ocean
    cls = ocean.env_class(name)
    if num_envs is None:
        probe = cls(num_envs=1, seed=seed, **config)
        num_envs = max(1, BENCH_ROWS // probe.num_agents)
        probe.close()
    env = cls(num_envs=num_envs, seed=seed, **config)
    pool = random_actions(env.single_action_space, env.num_agents, ACTION_POOL, seed)
    env.reset(seed=seed)
    for i in range(ACTION_POOL):  # warm caches and branch predictors before timing
        env.step(pool[i])
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for i in range(ACTION_POOL):
            env.step(pool[i])
        steps += ACTION_POOL
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    rows = env.num_agents
    env.close()
    return steps * rows / elapsed


# ---- scripted agents for `play` (and for the tests' closed-form checks) ----

def squared_policy(env, obs):
    """Walk toward the nearest remaining target (Manhattan distance)."""
    size = env.config['size']
    actions = np.zeros(env.num_agents, dtype=np.int32)
    for i, row in enumerate(obs):
        grid = row.reshape(size, size)
        agent = np.argwhere(grid == 1)[0]
        targets = np.argwhere(grid == 2)
        if len(targets) == 0:
            continue
        target = targets[np.abs(targets - agent).sum(1).argmin()]
        dr, dc = target - agent
        actions[i] = (2 if dr > 0 else 1) if dr != 0 else (4 if dc > 0 else 3)
    return actions


def _centre(normalised, extent, size):
    """Pixel centre of an object of `size` whose position is given normalised to [0, 1]."""
    return normalised * (extent - size) + size / 2


def _follow(paddle, target):
    """Move the paddle toward `target` (action 1 lowers the coordinate, 2 raises it), 2 px dead zone."""
    return np.where(target < paddle - 2, 1, np.where(target > paddle + 2, 2, 0)).astype(np.int32)


def pong_policy(env, obs):
    """Keep the paddle's centre on the ball's height."""
    return _follow(_centre(obs[:, 0], 128.0, env.config['paddle_height']), _centre(obs[:, 3], 128.0, 2.0))


def breakout_policy(env, obs):
    """Keep the paddle's centre under the ball."""
    return _follow(_centre(obs[:, 0], 144.0, env.config['paddle_width']), _centre(obs[:, 1], 144.0, 2.0))


def multiagent_policy(env, obs):
    return obs[:, 1].astype(np.int32)  # one-hot id: agent 1 has obs[1] == 1 and wants action 1


def bandit_policy(env, obs):
    return np.full(env.num_agents, env.config['best_arm'], dtype=np.int32)


SCRIPTED = {
    'squared': squared_policy,
    'pong': pong_policy,
    'breakout': breakout_policy,
    'multiagent': multiagent_policy,
    'bandit': bandit_policy,
}


def play(name, steps=200, fps=15.0, seed=0, scripted=False, out=None, clear=True, **config):
    """Show env instance 0 of `name` in the terminal for `steps` steps; returns the last episode log."""
    from pufferlib import ocean
    out = out or sys.stdout
    cls = ocean.env_class(name)
    env = cls(num_envs=1, seed=seed, **config)
    short = cls.name
    policy = SCRIPTED.get(short) if scripted else None
    if scripted and policy is None:
        raise APIUsageError(f'no scripted agent for puffer_{short}; scripted agents exist for '
                            f'{", ".join("puffer_" + k for k in SCRIPTED)}')
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    total, last_log = 0.0, None
    try:
        for t in range(steps):
            if policy is not None:
                actions = policy(env, obs)
            else:
                actions = random_actions(env.single_action_space, env.num_agents, 1, int(rng.integers(1 << 31)))[0]
            obs, rewards, terminals, truncations, infos = env.step(actions)
            total += float(rewards.sum())
            log = env.log()
            if log is not None:
                last_log = log
            text = env.render_text()
            header = (f'puffer_{short}  step {t + 1}/{steps}  reward {float(rewards.sum()):+.2f}  '
                      f'total {total:+.2f}  agent: {"scripted" if policy else "random"}\n')
            if clear:
                out.write('\x1b[H\x1b[2J')
            out.write(header + text + '\n')
            out.flush()
            if fps > 0:
                time.sleep(1.0 / fps)
    finally:
        env.close()
    if last_log is not None:
        out.write('last episodes: ' + ', '.join(f'{k} {v:.3g}' for k, v in last_log.items()) + '\n')
    return last_log


# ---- the CLI subcommands (wired into pufferlib.cli) ----

def _parse_config(pairs):
    """KEY=VALUE strings to kwargs; values parsed as int, then float, else kept as text."""
    config = {}
    for pair in pairs or []:
        if '=' not in pair:
            raise APIUsageError(f'options are KEY=VALUE, got {pair!r}')
        key, value = pair.split('=', 1)
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                pass
        config[key.replace('-', '_')] = value
    return config


def cmd_bench(args):
    from pufferlib import ocean
    names = ocean.env_names() if args.env == 'all' else [args.env]
    config = _parse_config(args.options)
    for name in names:
        ocean.env_class(name)  # unknown names fail before any timing
        sps = bench(name, seconds=args.seconds, num_envs=args.num_envs, **config)
        print(f'{name:<20} {sps / 1e6:8.2f} M steps/s  (1 core, random actions)')


def cmd_play(args):
    play(args.env, steps=args.steps, fps=args.fps, seed=args.seed, scripted=args.scripted,
         **_parse_config(args.options))


def add_commands(commands):
    """Add `bench` and `play` to an argparse subparsers object."""
    bench_parser = commands.add_parser('bench', help='steps per second of an Ocean env on one core (random actions)')
    bench_parser.add_argument('env', help='puffer_<name>, or "all" for every Ocean env')
    bench_parser.add_argument('options', nargs='*', metavar='KEY=VALUE', help='env options, e.g. width=32')
    bench_parser.add_argument('--seconds', type=float, default=2.0, help='timing length per env (default 2)')
    bench_parser.add_argument('--num-envs', type=int, default=None,
                              help=f'env instances in the vector (default: about {BENCH_ROWS} agent rows)')
    bench_parser.set_defaults(func=cmd_bench)

    play_parser = commands.add_parser('play', help='watch a random or scripted agent play an Ocean env in the terminal')
    play_parser.add_argument('env', help='puffer_<name>')
    play_parser.add_argument('options', nargs='*', metavar='KEY=VALUE', help='env options, e.g. width=15')
    play_parser.add_argument('--steps', type=int, default=200)
    play_parser.add_argument('--fps', type=float, default=15.0, help='frames per second (0: as fast as possible)')
    play_parser.add_argument('--seed', type=int, default=0)
    play_parser.add_argument('--scripted', action='store_true',
                             help=f'use the scripted agent ({", ".join(SCRIPTED)}) instead of a random one')
    play_parser.set_defaults(func=cmd_play)


def main(argv=None):
    """Standalone entry (`python -m pufferlib.ocean.tools bench puffer_pong`) for use without the CLI."""
    import argparse
    parser = argparse.ArgumentParser(prog='python -m pufferlib.ocean.tools')
    add_commands(parser.add_subparsers(dest='command', required=True))
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == '__main__':
    sys.exit(main())
