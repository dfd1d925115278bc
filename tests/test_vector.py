import functools
import gc
import multiprocessing.synchronize
import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from multiprocessing import shared_memory

import gymnasium
import numpy as np
import psutil
import pytest

import pufferlib
import pufferlib.vector as pv

from envs import DyingAgentsEnv, FaultyEnv, MaskedParallelEnv, NonFiniteEnv


def rollout(vecenv, steps, seed=0):
    """Per agent row, the list of (obs, reward, terminal) it saw; actions depend only on row and time."""
    vecenv.async_reset(seed)
    seen = defaultdict(list)
    counts = np.zeros(vecenv.num_agents, dtype=np.int64)
    for _ in range(steps):
        obs, rewards, terminals, truncations, infos, ids, masks = vecenv.recv()
        for j, row in enumerate(ids):
            seen[int(row)].append((obs[j].copy(), float(rewards[j]), bool(terminals[j]), bool(masks[j])))
        n = vecenv.single_action_space.n
        vecenv.send(((ids * 7 + counts[ids] * 3 + counts[ids] // 5) % n).astype(np.int32))
        counts[ids] += 1
    return seen


def assert_same_trajectories(expected, got):
    """Every transition `got` saw equals the reference's at the same step of the same row.

    How many steps each row took depends on scheduling, so only the steps a row did take are
    compared; `expected` must have at least as many per row (run it for as many recv calls).
    """
    assert set(got) <= set(expected)
    compared = 0
    for row, transitions in got.items():
        assert len(transitions) <= len(expected[row])
        for (oa, ra, ta, ma), (ob, rb, tb, mb) in zip(expected[row], transitions):
            np.testing.assert_array_equal(oa, ob)
            assert (ra, ta, ma) == (rb, tb, mb)
            compared += 1
    assert compared == sum(len(t) for t in got.values()) > 0


def worker_pids(vecenv):
    return [p.pid for p in vecenv.processes]


# Bounds on waits for another process to start or to end. They only turn a hang into a failure, so
# they are generous: on a loaded machine python with numpy and gymnasium can take tens of seconds to
# import, and a process that has been signalled still needs the CPU to exit.
START_S = 120.0
EXIT_S = 120.0


def gone(pids, timeout=EXIT_S):
    """True as soon as none of the pids is a live (non-zombie) process; False after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


def leftover_children():
    """Our live python descendants, but for the long-lived helpers of this process by design (Ray's, the
    module's ray_cluster, and multiprocessing's resource tracker)."""
    leftover = []
    for child in psutil.Process().children(recursive=True):
        try:
            if (child.name().startswith('python') and child.status() != psutil.STATUS_ZOMBIE
                    and not any(part in ' '.join(child.cmdline()) for part in ('ray', 'resource_tracker'))):
                leftover.append(child)
        except psutil.NoSuchProcess:  # ended while we looked (Ray's raylet starts and ends its workers)
            pass
    return leftover


@pytest.fixture
def no_leaks(monkeypatch):
    """No child process of ours outlives the test, and no shared-memory name we created stays in /dev/shm.

    Only our own: other programs on the machine create and remove /dev/shm entries all the time.
    Every named semaphore and SharedMemory block this process creates is recorded as it is made.
    """
    created = []
    make_name = multiprocessing.synchronize.SemLock._make_name

    def record_semaphore():
        created.append('sem.' + make_name().lstrip('/'))
        return created[-1][len('sem.'):]
    monkeypatch.setattr(multiprocessing.synchronize.SemLock, '_make_name', staticmethod(record_semaphore))
    shm_init = shared_memory.SharedMemory.__init__

    def record_shared_memory(self, *args, **kwargs):
        shm_init(self, *args, **kwargs)
        created.append(self._name.lstrip('/'))
    monkeypatch.setattr(shared_memory.SharedMemory, '__init__', record_shared_memory)
    yield created
    gc.collect()
    leftover = leftover_children()
    assert not leftover, f'child processes left behind: {leftover}'
    assert [name for name in created if os.path.exists(os.path.join('/dev/shm', name))] == []


# --- same results from every backend and mode --------------------------------------------------

@pytest.mark.parametrize('options', [
    dict(backend='Multiprocessing', num_workers=2),
    dict(backend='Multiprocessing', num_workers=2, batch_size=4),
    dict(backend='Multiprocessing', num_workers=4, batch_size=4, zero_copy=False),
    dict(backend='Serial', batch_size=2),
    dict(backend='Multiprocessing', num_workers=2, local_worker=True),
    dict(backend='Multiprocessing', num_workers=2, batch_size=4, local_worker=True),
    dict(backend='Multiprocessing', num_workers=4, batch_size=4, zero_copy=False, local_worker=True),
    dict(backend='Multiprocessing', num_workers=4, batch_size=4, num_processes=2),
    dict(backend='Multiprocessing', num_workers=4, batch_size=2, zero_copy=False, num_processes=2),
    dict(backend='Multiprocessing', num_workers=4, num_processes=2),
])
def test_backends_match_serial(options, no_leaks):
    with pv.make('CartPole-v1', num_envs=8, **options) as vecenv:
        steps = 60 * 8 // vecenv.batch_size
        got = rollout(vecenv, steps)
    with pv.make('CartPole-v1', backend='Serial', num_envs=8) as serial:
        assert_same_trajectories(rollout(serial, steps), got)


def test_multiagent_env_in_workers(no_leaks):
    with pv.make(DyingAgentsEnv, backend='Serial', num_envs=4) as serial:
        expected = rollout(serial, 40)
    with pv.make(DyingAgentsEnv, backend='Multiprocessing', num_envs=4, num_workers=2, batch_size=2) as vecenv:
        assert vecenv.num_agents == 12 and vecenv.agents_per_batch == 6
        assert_same_trajectories(expected, rollout(vecenv, 40))


def test_no_leaks_records_our_shared_memory_names(no_leaks):
    """The fixture's hooks still see what multiprocessing creates, so its check is not vacuous."""
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=2, num_workers=2) as vecenv:
        vecenv.reset(0)
    block = shared_memory.SharedMemory(create=True, size=64)
    assert any(name.startswith('sem.') for name in no_leaks) and block.name.lstrip('/') in no_leaks
    block.close()
    block.unlink()


def test_step_api_and_infos_cross_processes(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=4, num_workers=2, seed=3) as vecenv:
        obs, infos = vecenv.reset()
        assert obs.shape == (4, 4) and infos == []
        finished, episodes = 0, []
        for t in range(300):
            obs, rewards, terminals, truncations, infos = vecenv.step(np.ones(4, np.int32) * (t % 2))
            finished += int((terminals | truncations).sum())
            episodes.extend(infos)
        assert finished > 0 and len(episodes) == finished
        assert all(info['episode_return'] == info['episode_length'] > 0 for info in episodes)


class InfoSizes(pufferlib.PufferEnv):
    """Every step returns one info: a large one (more than a pipe page) every third step, else a small one."""
    single_observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
    single_action_space = gymnasium.spaces.Discrete(2)
    num_agents = 1

    def __init__(self, buf=None, seed=None):
        super().__init__(buf)
        self.t = 0

    def reset(self, seed=None):
        self.t = 0
        return self.observations, []

    def step(self, actions):
        self.t += 1
        blob = 'x' * (100_000 if self.t % 3 == 0 else 10)
        return self.observations, self.rewards, self.terminals, self.truncations, [{'t': self.t, 'blob': blob}]


@pytest.mark.parametrize('options', [dict(num_workers=2), dict(num_workers=4, num_processes=2, batch_size=2)])
def test_small_and_large_infos_cross_processes_intact(options, no_leaks):
    """Small infos cross in shared memory, large ones through the worker's pipe; both arrive whole."""
    with pv.make(InfoSizes, backend='Multiprocessing', num_envs=4, **options) as vecenv:
        vecenv.async_reset(0)
        sent = np.zeros(4, np.int64)  # steps sent to each row; a batch's infos are from the last
        for _ in range(16):
            *_, infos, ids, _ = vecenv.recv()
            expected = sorted(sent[ids].tolist()) if sent[ids].min() > 0 else []  # none from a reset
            assert sorted(info['t'] for info in infos) == expected
            assert all(len(info['blob']) == (100_000 if info['t'] % 3 == 0 else 10) for info in infos)
            vecenv.send(np.zeros(vecenv.agents_per_batch, np.int32))
            sent[ids] += 1
        assert sent.min() >= 3


class InfoOfSize(InfoSizes):
    """One info per step whose pickled batch (one env per worker) is `size` bytes."""
    size = 0

    def step(self, actions):
        self.t += 1
        blob = 'x' * next(n for n in range(self.size) if len(pickle.dumps([{'t': 1, 'blob': 'x' * n}])) >= self.size)
        return self.observations, self.rewards, self.terminals, self.truncations, [{'t': self.t % 100, 'blob': blob}]


@pytest.mark.parametrize('size', [pv.INFO_SLOT - 1, pv.INFO_SLOT, pv.INFO_SLOT + 1, 300])
def test_infos_at_the_shared_slot_boundary_arrive_whole(size, no_leaks):
    """A payload that just fills the slot stays in shared memory, one byte more takes the pipe."""
    creator = type('Sized', (InfoOfSize,), {'size': size})
    assert len(pickle.dumps(creator().step(None)[4])) == size
    with pv.make(creator, backend='Multiprocessing', num_envs=2, num_workers=2, batch_size=1) as vecenv:
        vecenv.async_reset(0)
        stepped = np.zeros(2, bool)  # a row's infos come from a step once it was sent one
        for _ in range(6):
            *_, infos, ids, _ = vecenv.recv()
            assert len(infos) == stepped[ids[0]]
            if infos:
                assert len(pickle.dumps(infos)) == size
            vecenv.send(np.zeros(1, np.int32))
            stepped[ids[0]] = True
        assert stepped.any()


def test_batches_return_first_ready_workers_and_cover_all_envs(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=8, num_workers=4, batch_size=2,
                 zero_copy=False) as vecenv:
        vecenv.async_reset(0)
        rows = set()
        # More workers than cores: a worker may not even be scheduled for a while, so allow time,
        # but every worker must be served eventually (no starvation).
        deadline = time.monotonic() + 60
        while rows != set(range(8)) and time.monotonic() < deadline:
            obs, _, _, _, _, ids, masks = vecenv.recv()
            assert obs.shape == (2, 4) and masks.all()
            rows.update(ids.tolist())
            vecenv.send(np.zeros(2, np.int32))
        assert rows == set(range(8))


def test_batches_can_be_held_and_answered_in_order(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=4, num_workers=2, batch_size=2) as vecenv:
        vecenv.async_reset(0)
        first = vecenv.recv()[5].copy()
        second = vecenv.recv()[5].copy()   # the first batch is still held
        assert sorted(first.tolist() + second.tolist()) == [0, 1, 2, 3]
        vecenv.send(np.zeros(2, np.int32), second)  # answer the newer batch, keep holding `first`
        assert vecenv.recv()[5].tolist() == second.tolist()
        vecenv.send(np.zeros(2, np.int32))  # no env_ids: the oldest outstanding batch, `first`
        assert vecenv.recv()[5].tolist() == first.tolist()
        with pytest.raises(pufferlib.APIUsageError, match='no outstanding batch starts at row'):
            vecenv.send(np.zeros(2, np.int32), np.array([99, 100]))


def test_zero_copy_batches_are_views_of_shared_memory(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=4, num_workers=4, batch_size=2) as vecenv:
        vecenv.async_reset(0)
        obs, *_, ids, _ = vecenv.recv()
        assert np.shares_memory(obs, vecenv.buffers.observations)
        assert ids.tolist() in ([0, 1], [2, 3])


def test_seeding_is_reproducible_and_seed_dependent(no_leaks):
    def first_obs(seed):
        with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=2, num_workers=2) as vecenv:
            return vecenv.reset(seed)[0].copy()
    np.testing.assert_array_equal(first_obs(1), first_obs(1))
    assert not np.array_equal(first_obs(1), first_obs(2))


# --- faults ------------------------------------------------------------------------------------

# Detecting a dead worker takes milliseconds on an idle box, but unit tests do not time things: a
# starved CI machine can take seconds. The bound below only turns a hang into a failure.
HANG_BOUND_S = 120

@pytest.mark.parametrize('mode, match', [
    ('raise', r'(?s)raised.*RuntimeError: boom: the env broke on purpose'),
    ('segfault', 'killed by signal SIGSEGV'),
    ('kill', 'killed by signal SIGKILL'),
])
def test_worker_failure_raises_quickly_and_cleans_up(mode, match, no_leaks):
    vecenv = pv.make(functools.partial(FaultyEnv, mode, 3), backend='Multiprocessing', num_envs=4, num_workers=2)
    pids = worker_pids(vecenv)
    vecenv.reset(0)
    with pytest.raises(pufferlib.EnvError, match=match):
        for _ in range(10):
            vecenv.step(np.zeros(4, np.int32))
    assert gone(pids)
    with pytest.raises(pufferlib.APIUsageError, match='closed'):
        vecenv.step(np.zeros(4, np.int32))


KILL_MODES = {
    'sync': dict(),
    'sync, local worker': dict(local_worker=True),
    'pool': dict(batch_size=2),
    'pool, copies': dict(batch_size=2, zero_copy=False),
    'pool, local worker': dict(batch_size=2, local_worker=True),
    'pool, local worker, copies': dict(batch_size=2, local_worker=True, zero_copy=False),
}


@pytest.mark.parametrize('parent', ['spinning', 'blocked'])
@pytest.mark.parametrize('mode', list(KILL_MODES))
def test_worker_killed_from_outside_raises_instead_of_hanging(mode, parent, no_leaks):
    """4 envs on 2 workers; worker 1 (envs 2-3) is SIGKILLed. In a pool the parent could be served by
    worker 0 alone for ever ('spinning'), or wait for worker 1 only ('blocked': worker 0's batch is
    held by the caller); either way it must notice."""
    vecenv = pv.make('CartPole-v1', backend='Multiprocessing', num_envs=4, num_workers=2, **KILL_MODES[mode])
    pids = worker_pids(vecenv)
    n = vecenv.agents_per_batch
    vecenv.async_reset(0)
    ids = vecenv.recv()[5].copy()
    if parent == 'blocked' and not vecenv.synchronous:
        while ids[0] != 0:  # hold worker 0's batch, so only worker 1 can answer the next recv
            vecenv.send(np.zeros(n, np.int32), ids)
            ids = vecenv.recv()[5].copy()
        other = vecenv.recv()[5].copy()
        os.kill(vecenv.processes[-1].pid, signal.SIGKILL)
        vecenv.send(np.zeros(n, np.int32), other)
        with pytest.raises(pufferlib.EnvError, match=r'worker 1 \(envs 2-3\) was killed by signal SIGKILL'):
            vecenv.recv()
    else:
        os.kill(vecenv.processes[-1].pid, signal.SIGKILL)
        start = time.monotonic()
        with pytest.raises(pufferlib.EnvError, match=r'worker 1 \(envs 2-3\) was killed by signal SIGKILL'):
            while time.monotonic() - start < HANG_BOUND_S:
                vecenv.send(np.zeros(n, np.int32))
                vecenv.recv()
    assert gone(pids)
    with pytest.raises(pufferlib.APIUsageError, match='closed'):
        vecenv.async_reset(0)


def hang_in_env_1(hang_after):
    """Creators for 4 envs where env 1 (worker 0 of 2, or worker 1 of 4) sleeps for an hour in step
    `hang_after`."""
    return [functools.partial(FaultyEnv, 'hang', hang_after if k == 1 else 10**9) for k in range(4)]


@pytest.mark.parametrize('options, worker', [
    (dict(num_workers=4), 1),
    (dict(num_workers=4, batch_size=2), 1),
    (dict(num_workers=2, batch_size=2, zero_copy=False), 0),
    (dict(num_workers=4, batch_size=1, local_worker=True), 1),
])
def test_env_that_blocks_in_step_times_out(options, worker, no_leaks):
    vecenv = pv.make(hang_in_env_1(3), backend='Multiprocessing', num_envs=4, step_timeout=0.5, **options)
    pids = worker_pids(vecenv)
    n = vecenv.agents_per_batch
    envs = '1-1' if vecenv.envs_per_worker == 1 else '0-1'
    vecenv.async_reset(0)
    start = time.monotonic()
    with pytest.raises(pufferlib.EnvError, match=rf'worker {worker} \(envs {envs}\) spent more than '
                                                 r'step_timeout=0.5 s in one step.*vec.step_timeout'):
        while time.monotonic() - start < 30:
            vecenv.recv()
            vecenv.send(np.zeros(n, np.int32))
    assert gone(pids)


def test_step_timeout_is_per_step_not_per_run(no_leaks):
    """Steps slower than the parent's pace but each inside the limit never trip it."""
    with pv.make(functools.partial(FaultyEnv, 'slow', 1), backend='Multiprocessing', num_envs=2, num_workers=2,
                 step_timeout=1.0) as vecenv:
        vecenv.reset(0)
        start = time.monotonic()
        while time.monotonic() - start < 2.5:
            vecenv.step(np.zeros(2, np.int32))


def test_local_worker_runs_worker_zero_in_this_process(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=8, num_workers=4, batch_size=2,
                 local_worker=True) as vecenv:
        assert len(vecenv.processes) == 3 and len(vecenv._local_envs) == 2
        vecenv.async_reset(0)
        served = defaultdict(int)
        # A pool must serve the remote workers too, not only the always-ready local one. How soon a
        # remote worker first answers is up to the scheduler (on a busy machine it may not run for
        # hundreds of steps), so the test waits for it with a deadline instead of counting steps.
        deadline = time.monotonic() + 60
        while set(served) != {0, 1, 2, 3} and time.monotonic() < deadline:
            ids = vecenv.recv()[5]
            served[int(ids[0]) // 2] += 1
            vecenv.send(np.zeros(2, np.int32))
        assert set(served) == {0, 1, 2, 3}


@pytest.mark.parametrize('victim', ['local', 'remote'])
def test_local_worker_failures(victim, no_leaks):
    # One creator per env: env 0 lives in the local worker, env 1 in the child process.
    faulty = 0 if victim == 'local' else 1
    creators = [functools.partial(FaultyEnv, 'raise', 5 if k == faulty else 10**9) for k in range(2)]
    vecenv = pv.make(creators, backend='Multiprocessing', num_envs=2, num_workers=2, local_worker=True)
    pids = worker_pids(vecenv)
    vecenv.reset(0)
    where = 'the local worker' if victim == 'local' else 'worker 1'
    with pytest.raises(pufferlib.EnvError, match=f'(?s){where}.*boom: the env broke on purpose'):
        for _ in range(10):
            vecenv.step(np.zeros(2, np.int32))
    assert gone(pids)
    with pytest.raises(pufferlib.APIUsageError, match='closed'):
        vecenv.step(np.zeros(2, np.int32))


class FailsInWorker(FaultyEnv):
    parent = os.getpid()

    def __init__(self):
        if os.getpid() != self.parent:
            raise ValueError('cannot open the display in a worker')
        super().__init__('raise', 10**9)


class ProcessId(gymnasium.Env):
    """Observes the id of the process that steps it."""
    observation_space = gymnasium.spaces.Box(0, 2**62, (1,), np.int64)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.array([os.getpid()]), {}

    def step(self, action):
        return np.array([os.getpid()]), 0.0, False, False, {}


def test_num_processes_interleaves_workers_over_processes(no_leaks):
    """Worker w runs in process w % num_processes, so each batch of a pool has a worker in each process."""
    with pv.make(ProcessId, backend='Multiprocessing', num_envs=8, num_workers=4, num_processes=2,
                 batch_size=4) as vecenv:
        assert vecenv.num_processes == len(vecenv.processes) == 2
        first, second = [p.pid for p in vecenv.processes]
        vecenv.async_reset(0)
        for _ in range(20):
            obs, *_, ids, _ = vecenv.recv()
            owner = dict(zip(ids.tolist(), obs[:, 0].tolist()))
            assert all(owner[row] == (first if row // 2 % 2 == 0 else second) for row in owner)
            vecenv.send(np.zeros(4, np.int32))


def test_a_process_of_several_workers_fails_as_one(no_leaks):
    creators = [functools.partial(FaultyEnv, 'raise', 5 if k == 6 else 10**9) for k in range(8)]
    vecenv = pv.make(creators, backend='Multiprocessing', num_envs=8, num_workers=4, num_processes=2, batch_size=4)
    pids = worker_pids(vecenv)
    vecenv.reset(0)
    with pytest.raises(pufferlib.EnvError, match=r'(?s)worker 3 \(envs 6-7\) raised.*boom'):
        for _ in range(20):
            vecenv.step(np.zeros(4, np.int32))
    assert gone(pids)
    vecenv = pv.make('CartPole-v1', backend='Multiprocessing', num_envs=8, num_workers=4, num_processes=2,
                     batch_size=4)
    pids = worker_pids(vecenv)
    vecenv.reset(0)
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(pufferlib.EnvError, match=r'process of workers 1, 3 \(envs 2-3, 6-7\) was killed by '
                                                 'signal SIGKILL'):
        while time.monotonic() - start < HANG_BOUND_S:
            vecenv.step(np.zeros(4, np.int32))
    assert gone(pids)


def masked_rollout(vecenv, steps, seed=0):
    """Per row, the first `steps` (observation, legal actions) it saw; each row plays a legal action from
    its own rng, so a row's sequence does not depend on which rows a pool batches it with. Steps until
    every row has `steps` of them (a deadline, not a step count: which workers a pool serves first is up
    to the scheduler)."""
    vecenv.async_reset(seed)
    seen = defaultdict(list)
    rngs = [np.random.default_rng(row) for row in range(vecenv.num_agents)]
    deadline = time.monotonic() + 60
    while (len(seen) < vecenv.num_agents or min(map(len, seen.values())) < steps) and time.monotonic() < deadline:
        obs, *_, ids, _ = vecenv.recv()
        legal = vecenv.action_masks[ids]
        for j, row in enumerate(ids):
            if len(seen[int(row)]) < steps:
                seen[int(row)].append((obs[j].copy(), legal[j].copy()))
        vecenv.send(np.array([rngs[row].choice(np.flatnonzero(m)) for row, m in zip(ids, legal)], np.int32))
    return seen


@pytest.mark.parametrize('zero_copy', [True, False])
def test_double_buffered_pool_forwards_action_masks(no_leaks, zero_copy):
    """Two workers per process: each batch's masks are the ones its envs wrote, row for row as in Serial.
    MaskedParallelEnv draws new legal actions every step and raises on an illegal one."""
    creator = functools.partial(MaskedParallelEnv, length=10**9)  # no autoreset: its reset draws unseeded
    with pv.make(creator, backend='Serial', num_envs=4, seed=3) as serial:
        expected = masked_rollout(serial, 40)
    with pv.make(creator, backend='Multiprocessing', num_envs=4, num_workers=4, num_processes=2, batch_size=2,
                 zero_copy=zero_copy, seed=3) as vecenv:
        assert vecenv.action_masks.shape == (8, 4)
        got = masked_rollout(vecenv, 40)
    compared = 0
    for row, transitions in got.items():
        for (obs_a, legal_a), (obs_b, legal_b) in zip(expected[row], transitions):
            np.testing.assert_array_equal(obs_a, obs_b)
            np.testing.assert_array_equal(legal_a, legal_b)
            compared += 1
    assert compared == sum(len(t) for t in got.values()) > 0 and set(got) == set(range(8))
    assert not np.stack([legal for t in got.values() for _, legal in t]).all()


def test_env_creation_error_in_worker(no_leaks):
    with pytest.raises(pufferlib.EnvError, match='(?s)ValueError: cannot open the display'):
        pv.make(FailsInWorker, backend='Multiprocessing', num_envs=2, num_workers=2)


def test_garbage_collection_stops_workers(no_leaks):
    vecenv = pv.make('CartPole-v1', backend='Multiprocessing', num_envs=2, num_workers=2)
    pids = worker_pids(vecenv)
    vecenv.reset(0)
    del vecenv
    gc.collect()
    assert gone(pids)


# The first line gives the child the SIGINT handling of a program started from a terminal. Python
# keeps SIGINT ignored when it inherits it ignored, as it does under CI runners and anything started
# in the background by a non-interactive shell: Ctrl-C would then do nothing and the child would step
# for ever (the test's intermittent hang, with nothing on stderr).
SCRIPT = textwrap.dedent('''
    import signal; signal.signal(signal.SIGINT, signal.default_int_handler)
    import sys, numpy as np, pufferlib.vector as pv
    vecenv = pv.make('CartPole-v1', backend='Multiprocessing', num_envs=2, num_workers=2)
    vecenv.reset(0)
    vecenv.step(np.zeros(2, np.int32))
    print(' '.join(str(p.pid) for p in vecenv.processes), flush=True)  # stepping from here on
    while True:
        vecenv.step(np.zeros(2, np.int32))
''')


def first_line(proc, timeout=START_S):
    """The first line `proc` prints, waiting at most `timeout` s for it (not for ever, as readline would)."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f'no output from the child process within {timeout:g} s'
    return proc.stdout.readline()


@pytest.mark.parametrize('how', ['ctrl-c', 'sigkill'])
def test_parent_interrupted_or_killed_leaves_no_workers(how, tmp_path):
    # stderr goes to a file, not a pipe: nothing the processes print can fill a pipe and block them.
    with open(tmp_path / 'stderr', 'w+') as stderr:
        proc = subprocess.Popen([sys.executable, '-c', SCRIPT], stdout=subprocess.PIPE, stderr=stderr,
                                text=True, start_new_session=True)
        try:
            pids = [int(p) for p in first_line(proc).split()]
            assert len(pids) == 2
            if how == 'ctrl-c':  # the terminal sends SIGINT to the whole foreground process group
                os.killpg(proc.pid, signal.SIGINT)
                proc.wait(timeout=EXIT_S)
                stderr.seek(0)
                err = stderr.read()
                # a clean Ctrl-C: the KeyboardInterrupt and nothing else (no error from closing the
                # workers), and the exit status of a process ended by SIGINT
                assert 'KeyboardInterrupt' in err and 'Exception ignored' not in err, err
                assert err.count('Traceback') == 1, err
                assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
            else:
                proc.kill()
                proc.wait(timeout=EXIT_S)
            assert gone(pids)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


ORPHAN_SCRIPT = textwrap.dedent('''
    import subprocess, sys
    child = subprocess.Popen([sys.executable, '-c', (
        'import time; from pufferlib.vector import set_parent_death_signal; '
        'set_parent_death_signal(); print("armed", flush=True); time.sleep(60)')], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == 'armed\\n'
    print(child.pid, flush=True)
    import time; time.sleep(60)
''')


def test_public_parent_death_signal_ends_a_child_with_its_parent():
    """The public helper sweep trials use too: a child that calls it dies when its parent is killed."""
    proc = subprocess.Popen([sys.executable, '-c', ORPHAN_SCRIPT], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        child = int(first_line(proc))
        proc.kill()
        proc.wait(timeout=EXIT_S)
        assert gone([child])
    finally:
        if proc.poll() is None:
            proc.kill()


# --- configuration errors ----------------------------------------------------------------------

@pytest.mark.parametrize('kwargs, match', [
    (dict(num_envs=6, num_workers=4), 'divisible by num_workers'),
    (dict(num_envs=8, num_workers=2, batch_size=3), 'batch_size=3 must divide'),
    (dict(num_envs=8, num_workers=2, batch_size=2), 'multiple of the envs per worker'),
    (dict(num_envs=0), 'positive integer'),
    (dict(num_envs=2.5), 'positive integer'),
    (dict(num_envs=2, backend='Threads'), 'unknown backend'),
    (dict(num_envs=2, spin_us=-1), 'spin_us must be a number >= 0'),
    (dict(num_envs=2, local_worker='yes'), 'local_worker must be True or False'),
    (dict(num_envs=8, num_workers=4, num_processes=3), 'num_processes=3 must divide num_workers=4'),
    (dict(num_envs=8, num_workers=4, num_processes=0), 'num_processes must be a positive integer'),
    (dict(num_envs=8, num_workers=4, num_processes=True), 'num_processes must be a positive integer'),
    (dict(num_envs=8, num_workers=4, num_processes=2, local_worker=True), 'cannot be combined'),
    (dict(num_envs=2, step_timeout=-1), r'step_timeout must be a number of seconds >= 0'),
    (dict(num_envs=2, step_timeout='10'), r'step_timeout must be a number of seconds >= 0'),
    (dict(num_envs=2, backend='Serial', step_timeout=10), 'Serial has no option step_timeout'),
    (dict(num_envs=2, seed=2**70), r'seed must be None or an integer in \[0, 2\*\*63 - num_envs\]'),
    (dict(num_envs=2, backend='Serial', seed=2**63 - 1), r'seed must be None or an integer'),
])
def test_bad_configuration(kwargs, match):
    kwargs.setdefault('backend', 'Multiprocessing')
    with pytest.raises(pufferlib.APIUsageError, match=match):
        pv.make('CartPole-v1', **kwargs)


BACKENDS = {'Serial': dict(backend='Serial'), 'Multiprocessing': dict(backend='Multiprocessing', num_workers=2)}


@pytest.mark.parametrize('backend', list(BACKENDS))
def test_seed_rule_is_the_same_in_every_backend(backend, no_leaks):
    """Env k is seeded seed + k, a 64-bit integer: a larger seed is refused the same way everywhere,
    and the largest accepted one gives the same envs everywhere."""
    largest = 2**63 - 2
    with pv.make('CartPole-v1', backend='Serial', num_envs=2) as serial:
        expected = serial.reset(largest)[0].copy()
    with pv.make('CartPole-v1', num_envs=2, **BACKENDS[backend]) as vecenv:
        for seed in (2**70, largest + 1, -1, 1.5):
            with pytest.raises(pufferlib.APIUsageError, match=r'seed must be None or an integer in \[0, 2\*\*63'):
                vecenv.reset(seed)
        np.testing.assert_array_equal(vecenv.reset(largest)[0], expected)


@pytest.mark.parametrize('backend', list(BACKENDS))
@pytest.mark.parametrize('actions, match', [
    (np.array([0, 2**32], np.int64), 'action 4294967296 for agent row 1 is outside Discrete'),
    (np.array([-1, 0], np.int64), 'action -1 for agent row 0 is outside Discrete'),
    (np.array([0, 2]), 'action 2 for agent row 1 is outside Discrete'),
    (np.array([2**64 - 1, 0], np.uint64), 'action 18446744073709551615 for agent row 0 is outside'),
])
def test_out_of_range_actions_are_refused_not_wrapped(backend, actions, match, no_leaks):
    with pv.make('CartPole-v1', num_envs=2, **BACKENDS[backend]) as vecenv, \
            pv.make('CartPole-v1', backend='Serial', num_envs=2) as reference:
        vecenv.reset(0), reference.reset(0)
        with pytest.raises(pufferlib.APIUsageError, match=match):
            vecenv.step(actions)
        # Refused before anything was dispatched: the batch is still the caller's to answer.
        np.testing.assert_array_equal(vecenv.step(np.ones(2, np.int32))[0], reference.step(np.ones(2, np.int32))[0])


def test_nan_box_actions_are_refused_on_every_step(no_leaks):
    with pv.make('Pendulum-v1', backend='Multiprocessing', num_envs=2, num_workers=2) as vecenv:
        vecenv.reset(0)
        for _ in range(3):
            vecenv.step(np.zeros((2, 1), np.float32))
        for bad in (np.nan, np.inf):
            with pytest.raises(pufferlib.APIUsageError, match=r'NaN or inf at agent rows \[1\]'):
                vecenv.step(np.array([[0.0], [bad]], np.float32))


@pytest.mark.parametrize('backend', list(BACKENDS))
def test_nonfinite_rows_finds_the_bad_rows(backend, no_leaks):
    """Env 1 gives a NaN reward, env 2 an inf observation; then the same inside Dict observations
    stored as bytes, next to 0xFF integers (which would read as NaN if the bytes were floats)."""
    whats = [None, 'reward', 'obs', None]
    creators = [functools.partial(NonFiniteEnv, what, 3) for what in whats]
    with pv.make(creators, num_envs=4, **BACKENDS[backend]) as vecenv:
        obs, _ = vecenv.reset(0)
        for step in range(1, 4):
            obs, rewards, *_ = vecenv.step(np.zeros(4, np.int32))
            assert vecenv.nonfinite_rows(obs, rewards).tolist() == ([] if step < 3 else [1, 2])
    creators = [functools.partial(NonFiniteEnv, what, 3, structured=True) for what in whats]
    with pv.make(creators, num_envs=4, **BACKENDS[backend]) as vecenv:
        obs, _ = vecenv.reset(0)
        assert obs.dtype == np.uint8
        for step in range(1, 4):
            obs, rewards, *_ = vecenv.step(np.zeros(4, np.int32))
            assert vecenv.nonfinite_rows(obs, rewards).tolist() == ([] if step < 3 else [1, 2])


@pytest.mark.filterwarnings('error')  # an overflowing sum of finite values is no reason to warn
def test_nonfinite_rows_of_plain_arrays():
    nonfinite_rows = pufferlib.nonfinite_rows  # the public name the trainer uses
    obs, rewards = np.zeros((5, 2, 3), np.float32), np.zeros(5, np.float32)
    assert nonfinite_rows(obs, rewards).tolist() == []
    obs[4, 1, 2], rewards[0] = -np.inf, np.nan
    assert nonfinite_rows(obs, rewards).tolist() == [0, 4]
    big = np.full((3, 4), 3e38, np.float32)  # finite, but its sum overflows: the exact check decides
    assert nonfinite_rows(big, np.zeros(3, np.float32)).tolist() == []
    assert nonfinite_rows(np.full((3, 4), 7, np.int64), np.ones(3, np.float32)).tolist() == []


def test_bad_calls(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=2, num_workers=2) as vecenv:
        with pytest.raises(pufferlib.APIUsageError, match='before async_reset'):
            vecenv.recv()
        with pytest.raises(pufferlib.APIUsageError, match='without a batch'):
            vecenv.send(np.zeros(2, np.int32))
        vecenv.async_reset(0)
        vecenv.recv()
        with pytest.raises(pufferlib.APIUsageError, match='nothing to wait for'):
            vecenv.recv()
        with pytest.raises(pufferlib.APIUsageError, match=r'shape \(2,\)'):
            vecenv.send(np.zeros(3, np.int32))
        with pytest.raises(pufferlib.APIUsageError, match='integers'):
            vecenv.send(np.zeros(2, np.float32))
        with pytest.raises(pufferlib.APIUsageError, match=r'seed must be None or an integer in \[0, 2\*\*63'):
            vecenv.async_reset(-1)


def test_creator_errors():
    with pytest.raises(pufferlib.APIUsageError, match='not an env'):
        pv.make(lambda: 42, num_envs=1)
    with pytest.raises(pufferlib.APIUsageError, match='takes no buf'):
        pv.make(lambda: pufferlib.make('CartPole-v1'), num_envs=1)
    with pytest.raises(pufferlib.APIUsageError, match='Did you mean'):
        pv.make('CartPol-v1')


def test_more_workers_than_cores_warns_but_works(no_leaks):
    workers = pv.cpu_count() + 1
    with pytest.warns(RuntimeWarning, match='more than the'):
        vecenv = pv.make('CartPole-v1', backend='Multiprocessing', num_envs=workers, num_workers=workers)
    with vecenv:
        obs, _ = vecenv.reset(0)
        assert obs.shape == (workers, 4)


def test_default_workers_fit_the_machine(no_leaks):
    with pv.make('CartPole-v1', backend='Multiprocessing', num_envs=12) as vecenv:
        assert vecenv.num_workers <= pv.cpu_count() and 12 % vecenv.num_workers == 0


def test_from_config_reads_a_vec_section_like_default_toml(no_leaks):
    """0 is automatic, left-out keys take default.toml's values, and Serial is not given the options
    only worker backends have (a step_timeout passed to make() would be an error there)."""
    from pufferlib import config as configuration
    section = configuration.defaults()['vec']
    with pv.from_config('CartPole-v1', section, seed=3) as vecenv:
        assert isinstance(vecenv, pv.resolve_backend(section['backend']))
        assert vecenv.num_envs == pv.cpu_count() and vecenv.batch_size == vecenv.num_envs
        assert vecenv.num_workers <= pv.cpu_count() and vecenv.step_timeout == section['step_timeout']
        first = vecenv.reset()[0].copy()
    with pv.make('CartPole-v1', backend='Serial', num_envs=pv.cpu_count(), seed=3) as reference:
        np.testing.assert_array_equal(first, reference.reset()[0])
    serial = {**section, 'backend': 'Serial', 'num_envs': 4, 'num_workers': 2, 'batch_size': 2, 'step_timeout': 5.0}
    with pv.from_config('CartPole-v1', serial) as vecenv:
        assert isinstance(vecenv, pv.Serial) and vecenv.num_workers == 4 and vecenv.batch_size == 2
    with pv.from_config('CartPole-v1', {'backend': 'Serial', 'num_envs': 2}) as vecenv:
        assert vecenv.num_envs == 2 and vecenv.synchronous and vecenv.zero_copy


def test_from_config_refuses_keys_that_are_not_vec_keys():
    with pytest.raises(pufferlib.APIUsageError, match='unknown \\[vec\\] key num_env; the keys are backend, num_envs'):
        pv.from_config('CartPole-v1', {'backend': 'Serial', 'num_env': 2})


def test_autotune_cli_prints_a_best_setting(capsys):
    from pufferlib.cli import main
    assert main(['autotune', 'CartPole-v1', '--seconds', '0.05', '--max-envs', str(pv.cpu_count())]) == 0
    out = capsys.readouterr().out
    assert 'best:' in out and 'pufferlib.vector.make(' in out
    assert main(['autotune', 'NoSuchEnv-v0']) == 2


# --- Ray: a real local instance (the ray_cluster fixture, tests/conftest.py) ---------------------


def test_ray_matches_serial(ray_cluster):
    with pv.make('CartPole-v1', backend='Serial', num_envs=4) as serial:
        expected = rollout(serial, 60)
    with pv.make('CartPole-v1', backend='Ray', num_envs=4, num_workers=2) as vecenv:
        assert_same_trajectories(expected, rollout(vecenv, 30))
    with pv.make('CartPole-v1', backend='Ray', num_envs=4, num_workers=2, batch_size=2) as vecenv:
        assert_same_trajectories(expected, rollout(vecenv, 60))


def test_ray_carries_action_masks_like_serial(ray_cluster):
    """A turn-based PettingZoo game: the masks come back from the actors with the other arrays."""
    pytest.importorskip('pygame', reason='pip install -c constraints.txt -e ".[pettingzoo]"')
    runs = []
    for backend in ('Serial', 'Ray'):
        with pv.make('pettingzoo_tictactoe', backend=backend, num_envs=4, num_workers=2, seed=0) as vecenv:
            rng = np.random.default_rng(0)
            vecenv.reset(seed=0)
            seen = [vecenv.action_masks.copy()]
            for _ in range(30):
                noise = np.where(vecenv.action_masks, rng.random(vecenv.action_masks.shape), -1.0)
                obs, rewards, *_ = vecenv.step(noise.argmax(1).astype(np.int32))  # a legal move per row
                seen += [vecenv.action_masks.copy(), obs.copy(), rewards.copy()]
            runs.append(seen)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert not runs[0][0].all()


def test_ray_worker_error_is_reported(ray_cluster):
    with pv.make(functools.partial(FaultyEnv, 'raise', 2), backend='Ray', num_envs=2, num_workers=2) as vecenv:
        vecenv.reset(0)
        with pytest.raises(pufferlib.EnvError, match='(?s)Ray worker .*boom'):
            for _ in range(5):
                vecenv.step(np.zeros(2, np.int32))


def test_ray_step_timeout_seed_rule_and_action_checks(ray_cluster):
    creators = [functools.partial(FaultyEnv, 'hang', 3 if k == 1 else 10**9) for k in range(2)]
    with pv.make(creators, backend='Ray', num_envs=2, num_workers=2, step_timeout=1.0) as vecenv:
        with pytest.raises(pufferlib.APIUsageError, match=r'seed must be None or an integer in \[0, 2\*\*63'):
            vecenv.reset(2**70)
        vecenv.reset(0)
        with pytest.raises(pufferlib.APIUsageError, match='action 4294967296 for agent row 0 is outside'):
            vecenv.step(np.array([2**32, 0], np.int64))
        with pytest.raises(pufferlib.EnvError, match=r'Ray worker 1 \(envs 1-1\) spent more than step_timeout=1 s'):
            for _ in range(10):
                vecenv.step(np.zeros(2, np.int32))
