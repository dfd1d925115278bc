"""pufferlib.cpus: the CPU quota of the process's cgroups (v1 and v2), read from fake trees, and from a real
cgroup with a quota where this machine lets a test make one."""
import os
import subprocess
import sys
import uuid

import pytest

from pufferlib import cpus

from small_run import SMALL

V2_MOUNTINFO = '30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n'
V1_MOUNTINFO = ('31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n'
                '32 25 0:28 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n')


def tree(tmp_path, mountinfo, cgroup, files):
    """A fake /proc/self/{mountinfo,cgroup} and cgroup files: mount points are rewritten under tmp_path."""
    mountinfo = mountinfo.replace(' /sys/fs/cgroup', f' {tmp_path}/sys/fs/cgroup')
    (tmp_path / 'mountinfo').write_text(mountinfo)
    (tmp_path / 'cgroup').write_text(cgroup)
    for path, text in files.items():
        full = tmp_path / path.lstrip('/')
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return str(tmp_path / 'cgroup'), str(tmp_path / 'mountinfo')


@pytest.mark.parametrize('files, quota', [
    ({'sys/fs/cgroup/cpu.max': 'max 100000\n'}, None),
    ({'sys/fs/cgroup/cpu.max': '200000 100000\n'}, 2.0),
    ({'sys/fs/cgroup/cpu.max': '250000 100000\n'}, 2.5),
    # A limit on an ancestor applies to the process's cgroup below it; the smallest wins.
    ({'sys/fs/cgroup/cpu.max': '800000 100000\n', 'sys/fs/cgroup/job/cpu.max': 'max 100000\n',
      'sys/fs/cgroup/job/trial/cpu.max': '150000 100000\n'}, 1.5),
    ({'sys/fs/cgroup/job/cpu.max': '50000 100000\n', 'sys/fs/cgroup/job/trial/cpu.max': 'max 100000\n'}, 0.5),
])
def test_a_v2_quota_is_the_smallest_on_the_way_up(tmp_path, files, quota):
    cgroup = '0::/job/trial\n' if any('job' in path for path in files) else '0::/\n'
    assert cpus.cpu_quota(*tree(tmp_path, V2_MOUNTINFO, cgroup, files)) == quota


@pytest.mark.parametrize('quota_us, period_us, quota', [('-1', '100000', None), ('300000', '100000', 3.0),
                                                         ('50000', '100000', 0.5)])
def test_a_v1_quota_is_read_below_the_mounts_root(tmp_path, quota_us, period_us, quota):
    """In a container the cpu controller's mount is rooted at the container's cgroup (/docker/abc): the
    process's path /docker/abc is that mount's top folder."""
    base = 'sys/fs/cgroup/cpu,cpuacct'
    files = {f'{base}/cpu.cfs_quota_us': quota_us, f'{base}/cpu.cfs_period_us': period_us}
    cgroup = '5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n'
    assert cpus.cpu_quota(*tree(tmp_path, V1_MOUNTINFO, cgroup, files)) == quota


def test_no_cgroup_files_is_no_quota(tmp_path):
    assert cpus.cpu_quota(str(tmp_path / 'none'), str(tmp_path / 'none')) is None
    # A cgroup without the cpu controller mounted says nothing either.
    assert cpus.cpu_quota(*tree(tmp_path, V1_MOUNTINFO.splitlines()[0] + '\n', '4:cpu:/x\n', {})) is None


@pytest.mark.parametrize('quota, cores, expected', [(None, 16, 16), (2.0, 16, 2), (2.5, 16, 2), (0.5, 16, 1),
                                                    (64.0, 16, 16)])
def test_cpu_count_is_the_affinity_capped_by_the_quota_rounded_down(monkeypatch, quota, cores, expected):
    monkeypatch.setattr(cpus, 'cpu_quota', lambda: quota)
    monkeypatch.setattr(cpus, 'affinity_count', lambda: cores)
    assert cpus.cpu_count() == expected
    assert cpus.describe() == (f'{cores} cores' if quota is None else
                               f'{expected} of {cores} cores (the cgroup allows {quota:g} CPUs)')


V1_CPU = '/sys/fs/cgroup/cpu'
PROBE = '''import sys
open(sys.argv[1] + '/cgroup.procs', 'w').write('0')  # "0": this process, into the quota's cgroup
import pufferlib.cpus, pufferlib.vector
print(pufferlib.cpus.cpu_quota(), pufferlib.vector.cpu_count(), pufferlib.cpus.describe())
'''


@pytest.mark.skipif(not os.access(os.path.join(V1_CPU, 'cpu.cfs_quota_us'), os.W_OK),
                    reason='no writable cgroup v1 cpu controller here (needs root and a v1 cpu mount)')
def test_a_real_cgroup_quota_caps_the_cpu_count(tmp_path):
    """A real cgroup with a quota of half a CPU: a process inside it sizes its work for one CPU."""
    folder = os.path.join(V1_CPU, f'puffer-test-{uuid.uuid4().hex[:8]}')
    try:
        os.mkdir(folder)
    except OSError as e:
        pytest.skip(f'cannot make a cgroup here: {e}')
    try:
        with open(os.path.join(folder, 'cpu.cfs_quota_us'), 'w') as f:
            f.write('50000')  # of the default 100,000 us period
        done = subprocess.run([sys.executable, '-c', PROBE, folder], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        quota, count, described = done.stdout.strip().split(' ', 2)
        assert float(quota) == 0.5 and count == '1'
        assert described.startswith('1 of ') and 'the cgroup allows 0.5 CPUs' in described
    finally:
        os.rmdir(folder)  # the probe has exited, so the cgroup is empty again


@pytest.fixture
def quota_of_one_on_sixteen(monkeypatch):
    """A container given one CPU on a 16-core host, as pufferlib.cpus sees it."""
    monkeypatch.setattr(cpus, 'cpu_quota', lambda: 1.0)
    monkeypatch.setattr(cpus, 'affinity_count', lambda: 16)


def test_learner_threads_follow_the_quota_less_the_workers(quota_of_one_on_sixteen):
    assert cpus.learner_threads(0, 0) == 1 and cpus.learner_threads(0, 4) == 1 and cpus.learner_threads(3, 0) == 3


def test_puffer_train_prints_what_it_decided_from_the_quota(quota_of_one_on_sixteen, tmp_path, monkeypatch):
    import threadpoolctl
    import torch

    from pufferlib import config as configuration
    from pufferlib import train
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    lines = []
    before = torch.get_num_threads()
    flags = [*SMALL, '--vec.backend', 'Serial', '--train.total-timesteps', '1024']
    try:
        train.train('puffer_bandit', config=configuration.load('puffer_bandit', flags), printer=lines.append)
        assert torch.get_num_threads() == 1
        assert all(pool['num_threads'] == 1 for pool in threadpoolctl.threadpool_info())
    finally:
        torch.set_num_threads(before)
        threadpoolctl.threadpool_limits(before)
    assert 'cpus: 1 of 16 cores (the cgroup allows 1 CPUs): 0 env worker processes, 1 torch thread' in lines, lines


# --- the sizes a config leaves automatic --------------------------------------------------------

AUTO_POOL = {'backend': 'Multiprocessing', 'num_envs': 0, 'num_workers': 0, 'batch_size': 0}


@pytest.mark.parametrize('cores, gpu, expected', [
    (2, False, {'num_envs': 8, 'num_workers': 2, 'batch_size': 4}),     # CleanRL's 8 Atari envs, two halves
    (2, True, {'num_envs': 4, 'num_workers': 1, 'batch_size': 4}),      # the learner keeps a core: no pool
    (16, False, {'num_envs': 64, 'num_workers': 16, 'batch_size': 32}),
    (16, True, {'num_envs': 56, 'num_workers': 14, 'batch_size': 28}),  # 15 left for workers, made even
    (3, False, {'num_envs': 8, 'num_workers': 2, 'batch_size': 4}),
    (1, False, {'num_envs': 4, 'num_workers': 1, 'batch_size': 4}),
])
def test_an_automatic_pool_is_sized_from_the_cores_and_the_gpu(cores, gpu, expected):
    sized = cpus.size_vec(AUTO_POOL, cores, gpu)
    assert sized == expected
    # what pufferlib.vector will accept: whole workers per batch, batches that divide the envs
    per_worker = sized['num_envs'] // sized['num_workers']
    assert sized['num_envs'] % sized['num_workers'] == 0 and sized['batch_size'] % per_worker == 0
    assert sized['num_envs'] % sized['batch_size'] == 0


def test_fixed_sizes_are_kept_and_the_rest_follow_them():
    assert cpus.size_vec({**AUTO_POOL, 'num_envs': 12}, 16, False) == {'num_workers': 12, 'batch_size': 12}
    assert cpus.size_vec({**AUTO_POOL, 'num_envs': 12}, 8, True) == {'num_workers': 6, 'batch_size': 12}
    assert cpus.size_vec({**AUTO_POOL, 'num_workers': 3}, 16, False) == {'num_envs': 12, 'batch_size': 12}
    assert cpus.size_vec({**AUTO_POOL, 'num_envs': 8, 'num_workers': 2, 'batch_size': 4}, 16, True) == {}
    assert cpus.size_vec({**AUTO_POOL, 'backend': 'Serial'}, 16, True) == {'num_envs': 16}


@pytest.mark.parametrize('rows, horizon, sampling, expected', [
    (8, 128, 'steps', 256),        # CleanRL's 4 minibatches of a 1,024-step rollout
    (56, 128, 'steps', 1792),
    (8, 64, 'segments', 512),      # the whole rollout, below default.toml's 8192
    (1000, 64, 'segments', 8192),
    (100, 100, 'segments', 8100),  # whole segments only
])
def test_an_automatic_minibatch_is_sized_from_the_rollout(rows, horizon, sampling, expected):
    assert cpus.size_minibatch(rows, horizon, sampling) == expected


def test_a_training_run_sizes_auto_keys_for_the_quota_and_says_so(quota_of_one_on_sixteen, monkeypatch):
    """The cores are the quota's (1 of 16), not the host's; the config then holds the numbers it saves."""
    from pufferlib import config as configuration
    from pufferlib import train
    config = configuration.load('CartPole-v1', ['--vec.num-envs', 'auto', '--vec.num-workers', 'auto',
                                                '--vec.batch-size', 'auto', '--train.minibatch-size', 'auto',
                                                '--train.minibatch-sampling', 'steps', '--train.prio-alpha', '0',
                                                '--train.device', 'cpu'])
    said = train.size_for_machine('CartPole-v1', config)
    assert said == ('auto for 1 core, no GPU: vec.num_envs 4, vec.num_workers 1, vec.batch_size 4, '
                    f'train.minibatch_size {4 * config["train"]["bptt_horizon"] // 4}')
    assert (config['vec']['num_envs'], config['vec']['num_workers'], config['vec']['batch_size']) == (4, 1, 4)
    monkeypatch.setattr(cpus, 'cpu_quota', lambda: None)  # the whole host: 16 cores
    config = configuration.load('CartPole-v1', ['--vec.num-envs', 'auto', '--train.device', 'cpu'])
    assert train.size_for_machine('CartPole-v1', config) == 'auto for 16 cores, no GPU: vec.num_envs 64, ' \
        'vec.num_workers 16, vec.batch_size 32'
    assert train.size_for_machine('CartPole-v1', config) == ''  # nothing automatic is left
