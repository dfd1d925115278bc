"""Neural MMO's side of scripts/lab/bench_mmo.py: runs in Neural MMO's own venv (nmmo 2.x pins numpy 1.23 and
Gymnasium 0.29, outside our pinned set), never in ours, and imports nothing of our package.

bench_mmo.py starts it (lab.benchmark.PeerProcess: `python -m lab.bench_nmmo`) and asks one JSON line at a
time on stdin:

    {"command": "hello"}                  -> versions
    {"command": "step", "seconds": 1}     -> agent steps per second of nmmo.Env() at its defaults

Random actions are drawn from each agent's action space ahead of time (a pool of 8 joint actions, as our
side cycles a pool), so sampling is not timed. An agent step is one live agent stepped once; with
random actions agents die, so a new episode starts when none is left, and the reset is timed too.
"""
import sys
import time

from lab.peer_serve import serve

ENV = None
POOL = []


def _env():
    global ENV
    if ENV is None:
        import nmmo
        ENV = nmmo.Env()
        obs, _ = ENV.reset(seed=0)
        POOL.extend({a: ENV.action_space(a).sample() for a in obs} for _ in range(8))
    return ENV


def hello():
    import gymnasium
    import nmmo
    import numpy
    env = _env()
    return {'nmmo': nmmo.__version__, 'numpy': numpy.__version__, 'gymnasium': gymnasium.__version__,
            'python': sys.version.split()[0], 'agents': env.config.PLAYER_N, 'map': env.config.MAP_CENTER}


def step(seconds):
    env = _env()
    obs, _ = env.reset(seed=0)
    agent_steps, calls = 0, 0
    start, thread = time.perf_counter(), time.thread_time()
    while time.perf_counter() - start < seconds:
        if not obs:
            obs, _ = env.reset()
        live = len(obs)
        obs, _, _, _, _ = env.step({a: act for a, act in POOL[calls % len(POOL)].items() if a in obs})
        agent_steps += live
        calls += 1
    wall, cpu = time.perf_counter() - start, time.thread_time() - thread
    return {'sps': agent_steps / wall, 'cpu_sps': agent_steps / cpu, 'steps': calls}


COMMANDS = {'hello': hello, 'step': step}


def main():
    serve(COMMANDS)


if __name__ == '__main__':
    main()
