"""The PufferLib 3.0 side of the benchmarks: runs in the anchor's venv, never in ours.

The benchmark programs start it (lab.benchmark.PeerProcess: `python -m lab.bench_anchor` with the anchor's
python, the lab's folder its only addition to the path) and ask it one JSON line at a time on stdin; it
answers one JSON line on stdout. Nothing here imports our package (the `pufferlib` importable here is 3.0).
Each measurement mirrors the one our side makes in the calling program: the same loop, the same action
pools, the same clock.

    {"command": "hello"}                                       -> versions
    {"command": "ocean", "env": "puffer_snake", "kwargs": {}, "rows": 4096, "seconds": 1}
    {"command": "vector", "env": "cartpole" | "busy", "backend": "Multiprocessing", "num_envs": 8, ...}
    {"command": "train", "env": "puffer_breakout", "flags": [...], "seconds": 20}
"""
import functools
import sys
import time

import numpy as np

from lab.peer_serve import serve

ACTION_POOL = 64
CLOCK_EVERY = 8


def random_actions(space, rows, count, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(space.dtype, np.floating):  # a Box: continuous actions (drone)
        return rng.uniform(space.low, space.high, size=(count, rows, *space.shape)).astype(np.float32)
    if hasattr(space, 'nvec'):
        return rng.integers(0, space.nvec, size=(count, rows, *space.nvec.shape), dtype=np.int32)
    return rng.integers(0, space.n, size=(count, rows), dtype=np.int32)


def ocean(env, kwargs, rows, seconds, seed=0):
    """Agent steps per second of one 3.0 Ocean env object of about `rows` agent rows.

    The loop of our pufferlib.ocean.tools.bench, written again because that module cannot be
    imported in 3.0's venv (its package is also called pufferlib); it looks at the clock every 8
    steps instead of 64, because some 3.0 envs take milliseconds per step at 4096 rows (connect4's
    opponent searches), and 64 of those overshoot a short run by seconds.
    """
    from pufferlib.ocean.environment import env_creator
    make = env_creator(env)
    probe = make(num_envs=1, **kwargs)
    per_env = probe.num_agents
    probe.close()
    instance = make(num_envs=max(1, rows // per_env), seed=seed, **kwargs)
    pool = random_actions(instance.single_action_space, instance.num_agents, ACTION_POOL, seed)
    instance.reset(seed=seed)
    for i in range(CLOCK_EVERY):  # warm caches and branch predictors before timing
        instance.step(pool[i])
    steps, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for i in range(CLOCK_EVERY):
            instance.step(pool[(steps + i) % ACTION_POOL])
        steps += CLOCK_EVERY
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    agents = instance.num_agents
    instance.close()
    return {'sps': steps * agents / elapsed, 'agents': agents}


def _gym_env(env):
    import gymnasium
    if env == 'busy':
        # Our BusyCartPole: the lab's module needs only gymnasium and numpy, so both sides step the same env.
        from lab.synthetic_envs import BusyCartPole
        return BusyCartPole(50, 150)
    return gymnasium.make('CartPole-v1')


def vector(env, backend, num_envs, seconds, num_workers=None, batch_size=None, zero_copy=True):
    """Steps per second of random actions through 3.0's vector send/recv loop (as bench_vector.measure_ours)."""
    import pufferlib.emulation
    import pufferlib.vector
    creator = functools.partial(pufferlib.emulation.GymnasiumPufferEnv, env_creator=functools.partial(_gym_env, env))
    options = {} if backend == 'Serial' else dict(num_workers=num_workers, batch_size=batch_size or num_envs,
                                                  zero_copy=zero_copy)
    vecenv = pufferlib.vector.make(creator, backend=getattr(pufferlib.vector, backend), num_envs=num_envs,
                                   **options)
    try:
        actions = [np.random.randint(0, 2, vecenv.agents_per_batch).astype(np.int32) for _ in range(16)]
        vecenv.async_reset(0)
        vecenv.recv()
        vecenv.send(actions[0])
        vecenv.recv()  # warm-up, as ours
        calls, start = 0, time.perf_counter()
        deadline = start + seconds
        while True:
            vecenv.send(actions[calls & 15])
            vecenv.recv()
            calls += 1
            if (calls & 7) == 0 and time.perf_counter() > deadline:
                return {'sps': calls * vecenv.agents_per_batch / (time.perf_counter() - start)}
    finally:
        vecenv.close()


def train(env, flags, seconds, rnn=True, env_kwargs=None):
    """3.0's own trainer (PuffeRL: evaluate + train per epoch) for `seconds`; steps per second of that loop.

    The config comes from 3.0's own parser, exactly as `puffer train ENV FLAGS` builds it. rnn=False
    is `rnn_name = None` in its config file: its command line cannot say None (the flag is typed str).
    env_kwargs are merged into its [env] section, as an edited config file would (not every env
    argument has a flag).
    With seconds=0 it only builds the trainer: a check that the config starts at all.
    """
    import torch
    from pufferlib import pufferl
    argv, sys.argv = sys.argv, ['puffer', *flags]
    try:
        args = pufferl.load_config(env)
    finally:
        sys.argv = argv
    args['env'].update(env_kwargs or {})
    if not rnn:
        args['rnn_name'] = None
        args['train']['use_rnn'] = False
    vecenv = pufferl.load_env(env, args)
    policy = pufferl.load_policy(args, vecenv)
    try:
        trainer = pufferl.PuffeRL(dict(**args['train'], env=env), vecenv, policy)
    except BaseException:
        vecenv.close()
        raise
    try:
        start, first = time.time(), trainer.global_step
        while time.time() - start < seconds and trainer.global_step < args['train']['total_timesteps']:
            trainer.evaluate()
            trainer.train()
        elapsed = max(time.time() - start, 1e-9)
        steps = trainer.global_step - first
    finally:
        trainer.vecenv.close()
        trainer.utilization.stop()
    return {'sps': steps / elapsed, 'steps': steps, 'seconds': elapsed, 'rnn': args['rnn_name'],
            'agents': vecenv.num_agents, 'torch_threads': torch.get_num_threads(),
            'vec': {k: v for k, v in args['vec'].items() if k != 'seed'}}


def hello():
    import gymnasium
    import pufferlib
    import torch
    return {'pufferlib': pufferlib.__version__, 'torch': torch.__version__, 'numpy': np.__version__,
            'gymnasium': gymnasium.__version__}


COMMANDS = {'hello': hello, 'ocean': ocean, 'vector': vector, 'train': train}


def main():
    # SystemExit: 3.0's argparse rejecting a flag
    serve(COMMANDS, catch=(Exception, SystemExit))


if __name__ == '__main__':
    main()
