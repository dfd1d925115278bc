"""Every observation an emulated env returns is stored as it is, or refused with one error that names the
env, the key, the value and the space: never truncated or wrapped around (300 as uint8 is 44), on any step,
in any backend. Values beyond a Box's declared bounds (but within its dtype) are stored as they are, on
purpose (see pufferlib.emulation.checks.describe_mismatch)."""
import functools

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import ParallelEnv

import pufferlib
import pufferlib.vector as pv
from pufferlib.emulation import GymnasiumPufferEnv, PettingZooPufferEnv

from envs import FRAME, ISSUE_VALUE, LaterObservation


def step_twice(env):
    actions = np.zeros(env.num_agents, np.int32)
    env.reset(seed=0)
    env.step(actions)
    return env.step(actions)[0]


def test_the_issue_float_frame_is_refused_not_wrapped():
    env = GymnasiumPufferEnv(env=LaterObservation())
    with pytest.raises(pufferlib.SpaceError) as caught:
        step_twice(env)
    message = str(caught.value)
    for part in ('GymnasiumPufferEnv(LaterObservation)', '<root>', 'float64', '300.7', 'Box(0, 255, (4,), uint8)'):
        assert part in message, message


@pytest.mark.parametrize('bad, match', [
    (np.array([300, 1, 2, 3]), r'value 300 at index \(0,\) does not fit uint8 \(0 to 255\), the dtype of '
                               r'Box\(0, 255, \(4,\), uint8\): stored, it would wrap around'),
    (np.array([1, -1, 2, 3], np.int16), r'value -1 at index \(1,\) does not fit uint8'),
    ([1, 2, 3, 256], r'value 256 at index \(3,\)'),
    (np.array([1.0, 2.0, 3.0, 4.0], np.float32), 'float32 values cannot be stored'),
])
def test_integer_frames_must_fit(bad, match):
    with pytest.raises(pufferlib.SpaceError, match=match):
        step_twice(GymnasiumPufferEnv(env=LaterObservation(bad=bad)))


def test_integers_of_another_dtype_that_fit_are_stored_exactly():
    obs = step_twice(GymnasiumPufferEnv(env=LaterObservation(bad=np.array([0, 7, 255, 128], np.int64))))
    np.testing.assert_array_equal(obs[0], [0, 7, 255, 128])


def test_a_box_holds_what_its_dtype_holds_beyond_its_declared_bounds():
    """The choice: a Box's bounds, integer as float, are not enforced (the value is stored exactly);
    its dtype's range is (a value outside it would wrap around)."""
    space = spaces.Box(0, 15, (3,), np.uint8)
    obs = step_twice(GymnasiumPufferEnv(env=LaterObservation(space, np.array([1, 2, 16]))))
    np.testing.assert_array_equal(obs[0], [1, 2, 16])
    with pytest.raises(pufferlib.SpaceError, match=r'value 256 at index \(2,\) does not fit uint8'):
        step_twice(GymnasiumPufferEnv(env=LaterObservation(space, np.array([1, 2, 256]))))


def test_floats_beyond_a_float_box_are_stored_as_they_are():
    """The choice: float bounds are not enforced (many envs exceed them slightly), on the first
    observation as on later ones."""
    space = spaces.Box(-1, 1, (2,), np.float32)
    obs = step_twice(GymnasiumPufferEnv(env=LaterObservation(space, np.array([1.5, -2.0], np.float32))))
    np.testing.assert_array_equal(obs[0], [1.5, -2.0])

    class FromTheStart(LaterObservation):
        def reset(self, seed=None, options=None):
            return self.bad, {}
    first = GymnasiumPufferEnv(env=FromTheStart(space, np.array([1.5, -2.0])))  # float64 into float32
    np.testing.assert_array_equal(first.reset(seed=0)[0][0], [1.5, -2.0])


DICT = spaces.Dict({'id': spaces.Discrete(3), 'bits': spaces.MultiBinary(2), 'cells': spaces.MultiDiscrete([4, 4]),
                    'glyphs': spaces.Box(0, 5976, (2,), np.int16), 'pos': spaces.Box(-1, 1, (2,), np.float32)})
GOOD = {'id': 2, 'bits': np.array([0, 1], np.int8), 'cells': np.array([3, 0]), 'glyphs': np.array([5976, 0], np.int16),
        'pos': np.array([0.5, 3.0], np.float32)}


@pytest.mark.parametrize('key, value, match', [
    ('id', 3, r'id: value 3 is outside Discrete\(3\) \(valid: 0 to 2\)'),
    ('id', np.int64(-1), r'id: value -1 is outside Discrete\(3\)'),
    ('id', 1.5, r'id: float64 values cannot be stored in Discrete\(3\)'),
    ('bits', np.array([0, 2], np.int8), r'bits: value 2 at index \(1,\) is outside MultiBinary\(2\)'),
    ('bits', np.array([-1, 0], np.int8), r'bits: value -1 at index \(0,\)'),
    ('cells', np.array([1, 4]), r'cells: value 4 at index \(1,\) is outside MultiDiscrete\(\[4 4\]\)'),
    ('cells', np.array([-1, 0], np.int8), r'cells: value -1 at index \(0,\)'),
    ('glyphs', np.array([40000, 0]), r'glyphs: value 40000 at index \(0,\) does not fit int16.*wrap around'),
    ('pos', np.array([1, 2], np.complex64), r'pos: complex64 values cannot be stored'),
])
def test_each_leaf_of_a_dict_is_checked_on_every_step(key, value, match):
    env = GymnasiumPufferEnv(env=LaterObservation(DICT, {**GOOD, key: value}, good_steps=3))
    env.reset(seed=0)
    for _ in range(3):
        env.step(np.zeros(1, np.int32))
    with pytest.raises(pufferlib.SpaceError, match=rf'GymnasiumPufferEnv\(LaterObservation\).*at {match}'):
        env.step(np.zeros(1, np.int32))


def test_a_valid_dict_of_other_integer_dtypes_and_python_scalars_is_stored():
    value = {**GOOD, 'id': np.uint8(1), 'bits': np.array([True, False]), 'glyphs': [3, 4]}
    env = GymnasiumPufferEnv(env=LaterObservation(DICT, value))
    native = pufferlib.emulation.nativize(step_twice(env), env.obs_dtype)
    assert int(native['id'][0]) == 1 and native['glyphs'][0].tolist() == [3, 4]
    assert native['bits'][0].tolist() == [1, 0] and native['pos'][0].tolist() == [0.5, 3.0]


class LaterObservationAgents(ParallelEnv):
    """Two agents with uint8 frames; agent 'b' returns `bad` from step 2 on."""

    metadata = {'name': 'later_observation_agents_v0'}

    def __init__(self, bad=ISSUE_VALUE):
        self.possible_agents, self.bad, self.t = ['a', 'b'], bad, 0

    def observation_space(self, agent):
        return FRAME

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {a: np.zeros(4, np.uint8) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        obs = {a: self.bad if a == 'b' and self.t >= 2 else np.full(4, self.t, np.uint8) for a in self.agents}
        no = {a: False for a in self.agents}
        return obs, {a: 0.0 for a in self.agents}, no, dict(no), {a: {} for a in self.agents}


@pytest.mark.parametrize('bad, match', [(ISSUE_VALUE, r'float64 values cannot be stored.*300\.7'),
                                        (np.array([1, 2, 3, 999]), r'value 999 at index \(3,\)')])
def test_pettingzoo_agents_are_checked_on_every_step(bad, match):
    env = PettingZooPufferEnv(env=LaterObservationAgents(bad))
    env.reset(seed=0)
    env.step(np.zeros(2, np.int32))
    who = r"PettingZooPufferEnv\(LaterObservationAgents\) agent 'b'"
    with pytest.raises(pufferlib.SpaceError, match=rf'{who}.*{match}'):
        env.step(np.zeros(2, np.int32))


WHAT = r'(?s)GymnasiumPufferEnv\(LaterObservation\).*<root>: float64 values cannot be stored in Box\(0, 255.*300\.7'


def test_every_backend_raises_it_as_it_raises_other_env_errors():
    """Serial raises the env's own error; Multiprocessing an EnvError that carries it (as for any env
    error, test_vector.py)."""
    with (pv.make(LaterObservation, backend='Serial', num_envs=2) as vecenv,
          pytest.raises(pufferlib.SpaceError, match=WHAT)):
        step_twice(vecenv)
    with (pv.make(LaterObservation, backend='Multiprocessing', num_envs=2, num_workers=2) as vecenv,
          pytest.raises(pufferlib.EnvError, match=WHAT)):
        step_twice(vecenv)


def test_ray_raises_it_too(ray_cluster):
    with (pv.make(functools.partial(LaterObservation), backend='Ray', num_envs=2, num_workers=2) as vecenv,
          pytest.raises(pufferlib.EnvError, match=WHAT)):
        step_twice(vecenv)


def test_the_emulation_benchmark_compares_two_revisions():
    """lab.bench_emulation, briefly: this checkout against HEAD's emulation, one row per observation kind."""
    import subprocess
    import sys
    script = ['-m', 'lab.bench_emulation']
    brief = ['--rounds', '1', '--steps', '20', '--chunks', '1']
    done = subprocess.run([sys.executable, *script, '--against', 'HEAD', *brief], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith('| ') and not line.startswith('| observation')]
    assert [row.split('|')[1].strip() for row in rows] == ['CartPole-v1', 'Atari-like frame', 'NetHack-like Dict']
    assert all(len(row.split('|')) == 10 for row in rows)  # raw, two trees, difference, two fastest, rounds
    refused = subprocess.run([sys.executable, *script, '--against', 'no-such-revision'], capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 1 and "'no-such-revision' is not a git revision" in refused.stderr
