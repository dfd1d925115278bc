"""Playing an Ocean env for a number of steps and reading its episode logs: what the Ocean test files share."""


def episode_logs(env, act, steps, seed=1):
    """The finished-episode logs (one dict per report) over `steps` steps of `act(obs) -> actions`."""
    obs, _ = env.reset(seed=seed)
    logs = []
    for t in range(steps):
        obs, _, _, _, infos = env.step(act(obs, t))
        logs.extend(infos)
    last = env.log()
    if last:
        logs.append(last)
    return logs


def episode_means(logs, keys=('perf', 'score', 'episode_return', 'episode_length')):
    """Means over the episodes the logs count (each log averages its `n` episodes), and `n` itself."""
    n = sum(log['n'] for log in logs)
    assert n > 0, 'no episode finished'
    return {key: sum(log[key] * log['n'] for log in logs) / n for key in keys} | {'n': n}
