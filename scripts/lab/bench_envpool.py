"""The EnvPool side of lab.bench_vector's Atari rows: runs in EnvPool's own venv, never in ours.

EnvPool brings its own pins (its 0.x releases numpy < 2 and an old gym), so it lives in a venv of its own (the
recipe is in lab.bench_vector's docstring). lab.bench_vector starts this
module there (lab.benchmark.PeerProcess: `python -m lab.bench_envpool` with that venv's python, the lab's
folder its only addition to the path) and asks it one JSON line at a time on stdin; it answers one JSON
line on stdout. It imports nothing of ours, so it runs beside any version of our package.

    {"command": "hello"}                                       -> versions
    {"command": "atari", "game": "Breakout-v5", "num_envs": 8, "batch_size": 8, "num_threads": 2,
     "seconds": 3, "options": {...envpool.make keyword arguments...}}  -> steps/s, CPU us per step

The loop mirrors bench_vector.time_loop: random actions drawn ahead of time, one warm-up step, the
clock looked at every 8 steps, agent steps counted (batch_size per call).
"""
import time

import numpy as np

from lab.peer_serve import serve

ACTION_POOL = 16


def hello():
    import envpool
    import gymnasium
    return {'envpool': envpool.__version__, 'numpy': np.__version__, 'gymnasium': gymnasium.__version__}


def atari(game, num_envs, batch_size, num_threads, seconds, options, seed=0):
    """Agent steps per second of EnvPool's Atari env through its own loop: step() when batch_size == num_envs,
    else its asynchronous send/recv (the first batch_size envs to finish come back)."""
    import envpool
    env = envpool.make(game, env_type='gymnasium', num_envs=num_envs, batch_size=batch_size,
                       num_threads=num_threads, seed=seed, **options)
    try:
        rng = np.random.default_rng(seed)
        pool = rng.integers(0, env.action_space.n, (ACTION_POOL, batch_size), dtype=np.int32)
        if batch_size == num_envs:
            observation, _ = env.reset()

            def step(actions):
                return env.step(actions)[0]
        else:
            env.async_reset()
            observation, *_, info = env.recv()
            ids = [info['env_id']]

            def step(actions):
                env.send(actions, ids[0])
                result = env.recv()
                ids[0] = result[-1]['env_id']
                return result[0]
        step(pool[0])  # warm-up, as ours
        calls, cpu, start = 0, time.process_time(), time.perf_counter()
        deadline = start + seconds
        while True:
            step(pool[calls % ACTION_POOL])
            calls += 1
            if (calls & 7) == 0 and time.perf_counter() > deadline:
                elapsed, used = time.perf_counter() - start, time.process_time() - cpu
                # process_time counts every thread of this process: EnvPool's workers are threads here.
                return {'sps': calls * batch_size / elapsed, 'cpu_us': 1e6 * used / (calls * batch_size),
                        'observation': list(observation.shape[1:]), 'actions': int(env.action_space.n)}
    finally:
        env.close()


COMMANDS = {'hello': hello, 'atari': atari}


def main():
    serve(COMMANDS)


if __name__ == '__main__':
    main()
