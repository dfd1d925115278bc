"""Third-party bindings (pufferlib/environments): every family through Serial and Multiprocessing.

A family whose packages are missing skips with the install line in the reason. Episodes are kept
short through each family's own kwargs so that episode stats arrive within the step budget.
Pokémon runs on a tiny homebrew Game Boy ROM (tests/gb_rom.py), never a real game.
"""
import importlib
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import pufferlib
import pufferlib.vector
from pufferlib import environments, registry
from pufferlib.pufferenv import APIUsageError

from gb_rom import build_gb_rom

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / 'pufferlib' / 'config'


@pytest.fixture(scope='session')
def test_rom(tmp_path_factory):
    path = tmp_path_factory.mktemp('rom') / 'puffer_test.gb'
    path.write_bytes(build_gb_rom(walker=True))
    return str(path)


# name -> (module that must import, extra, kwargs that keep episodes short, steps in the default run)
CASES = {
    'classic_cartpole': (None, None, {}, 1000),
    'classic_pendulum': (None, None, {'max_episode_steps': 100}, 1000),
    'pettingzoo_kaz': ('pymunk', 'pettingzoo', {'max_cycles': 100}, 1000),
    'pettingzoo_pistonball': ('pymunk', 'pettingzoo', {'n_pistons': 4, 'max_cycles': 40}, 200),
    'atari_breakout': ('ale_py', 'atari', {'max_episode_frames': 2000}, 1000),
    'atari_pong': ('ale_py', 'atari', {'max_episode_frames': 1000, 'repeat_action_probability': 0.0}, 1000),
    'procgen_bigfish': ('procgen', 'procgen', {'max_episode_steps': 100}, 1000),
    'procgen_coinrun': ('procgen', 'procgen', {'max_episode_steps': 100, 'distribution_mode': 'hard'}, 1000),
    'nethack': ('nle', 'nethack', {'max_episode_steps': 100}, 1000),
    'minihack_room': ('nle', 'minihack', {'max_episode_steps': 50}, 1000),
    'minigrid_doorkey': ('minigrid', 'minigrid', {'max_episode_steps': 50}, 1000),
    # A 64x64 world takes ~1 s to generate (pure-Python noise); a 32x32 one a quarter of that.
    'crafter': ('crafter', 'crafter', {'length': 50, 'area': [32, 32]}, 60),
    'pokemon_red': ('pyboy', 'pokemon', {'check_rom': False, 'max_steps': 100}, 300),
}


def need(name):
    module, extra, kwargs, steps = CASES[name]
    if module is not None:
        pytest.importorskip(module, reason=f'pip install "pufferlib[{extra}]" (see docs/environments.md)')
    if name.startswith('minihack'):
        from pufferlib.environments import minihack
        try:
            minihack._import_minihack()
        except ImportError as e:
            pytest.skip(str(e))
    return dict(kwargs), steps


def kwargs_for(name, test_rom):
    kwargs, steps = need(name)
    if name == 'pokemon_red':
        kwargs['rom_path'] = test_rom
    return kwargs, steps


def random_actions(space, rows, count, seed):
    space.seed(seed)
    return [np.stack([space.sample() for _ in range(rows)]) for _ in range(count)]


def check_rows(obs, space):
    assert obs.shape[1:] == space.shape and obs.dtype == space.dtype


def run_binding(name, backend, kwargs, steps):
    single = pufferlib.make(name, **kwargs)
    obs, infos = single.reset(seed=0)
    check_rows(obs, single.single_observation_space)
    assert single.single_observation_space.contains(obs[0])
    single.close()

    vecenv = pufferlib.vector.make(name, backend=backend, num_envs=2, num_workers=2, env_kwargs=kwargs, seed=0)
    try:
        assert vecenv.single_observation_space == single.single_observation_space
        assert vecenv.single_action_space == single.single_action_space
        assert vecenv.obs_dtype == single.obs_dtype
        assert vecenv.agents_per_env == single.num_agents
        obs, _ = vecenv.reset(seed=0)
        check_rows(obs, single.single_observation_space)
        episodes = []
        for actions in random_actions(vecenv.single_action_space, vecenv.agents_per_batch, steps, seed=1):
            obs, rewards, terminals, truncations, infos = vecenv.step(actions.astype(vecenv.action_dtype))
            episodes.extend(infos)
        check_rows(obs, single.single_observation_space)
        assert np.isfinite(rewards).all()
        assert episodes, f'{name}: no episode finished in {steps} steps'
        for info in episodes:
            assert {'episode_return', 'episode_length'} <= set(info)
            assert all(isinstance(value, (int, float)) for value in info.values()), info
    finally:
        vecenv.close()
    return episodes


@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
@pytest.mark.parametrize('name', list(CASES))
def test_binding(name, backend, test_rom):
    kwargs, steps = kwargs_for(name, test_rom)
    run_binding(name, backend, kwargs, steps)


SHORTENED = [name for name, case in CASES.items() if case[3] < 1000]


@pytest.mark.slow
@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
@pytest.mark.parametrize('name', SHORTENED)
def test_binding_full(name, backend, test_rom):
    """The bindings whose default test runs fewer steps (they step slowly), at the full 1,000."""
    kwargs, _ = kwargs_for(name, test_rom)
    run_binding(name, backend, kwargs, 1000)


# --- seeding ---------------------------------------------------------------------------------

NLE_ENVS = ['nethack', 'minihack_room']


@pytest.mark.parametrize('name', NLE_ENVS)
def test_nle_envs_honor_the_seed(name):
    """NLE seeds only its Python RNG from reset(seed); the game's own RNGs came from the clock."""
    from gymnasium.utils.env_checker import check_env
    from pufferlib.emulation import GymnasiumAdapter
    kwargs, _ = need(name)
    env = pufferlib.make(name, **kwargs)
    first = env.reset(seed=1)[0].copy()
    np.testing.assert_array_equal(env.reset(seed=1)[0], first)
    np.testing.assert_array_equal(pufferlib.make(name, **kwargs).reset(seed=1)[0], first)
    assert not np.array_equal(env.reset(seed=2)[0], first)
    env.close()
    check_env(GymnasiumAdapter(pufferlib.make(name, **kwargs)), skip_render_check=True)


@pytest.mark.parametrize('name', NLE_ENVS)
def test_nle_envs_agree_in_serial_and_multiprocessing(name):
    """Same seed, same actions: same observations and rewards in both backends, across episode ends
    (the seeds of the episodes after an autoreset follow from the first)."""
    kwargs, _ = need(name)
    kwargs['max_episode_steps'] = 10
    runs = []
    for backend in ('Serial', 'Multiprocessing'):
        with pufferlib.vector.make(name, backend=backend, num_envs=2, num_workers=2, env_kwargs=kwargs) as vecenv:
            obs, _ = vecenv.reset(seed=7)
            seen, ends = [obs.copy()], 0
            for actions in random_actions(vecenv.single_action_space, 2, 25, seed=3):
                obs, rewards, terminals, truncations, _ = vecenv.step(actions.astype(vecenv.action_dtype))
                seen.append((obs.copy(), rewards.copy()))
                ends += int((terminals | truncations).sum())
            runs.append((seen, ends))
    (serial, serial_ends), (multi, multi_ends) = runs
    assert serial_ends >= 2 and serial_ends == multi_ends
    np.testing.assert_array_equal(serial[0], multi[0])
    for (obs_s, rew_s), (obs_m, rew_m) in zip(serial[1:], multi[1:]):
        np.testing.assert_array_equal(obs_s, obs_m)
        np.testing.assert_array_equal(rew_s, rew_m)


def test_nethack_challenge_runs_under_a_seed():
    """The challenge refuses NetHack's seeds; vector envs always seed, so the seed must not reach them
    (the games are not reproducible) and a seeded reset and steps must work in a vector env."""
    kwargs, _ = need('nethack')
    kwargs['max_episode_steps'] = 10
    with pufferlib.vector.make('nethack_challenge', backend='Serial', num_envs=2, env_kwargs=kwargs) as vecenv:
        assert vecenv.single_action_space.n == 121
        obs, _ = vecenv.reset(seed=7)
        check_rows(obs, vecenv.single_observation_space)
        ends = 0
        for actions in random_actions(vecenv.single_action_space, 2, 25, seed=3):
            obs, rewards, terminals, truncations, _ = vecenv.step(actions.astype(vecenv.action_dtype))
            ends += int((terminals | truncations).sum())
        assert ends >= 2 and np.isfinite(rewards).all()


# --- procgen: envs dropped without close() --------------------------------------------------

def run_python(code, timeout):
    """`code` in a fresh interpreter; a hang is a failure, not a stuck test run."""
    try:
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f'hung for {timeout} s; its output so far:\n{e.stdout}{e.stderr}')
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize('count', [10, 40])
def test_procgen_envs_dropped_without_close_do_not_hang_or_crash_at_exit(count):
    """gym3 closed the dropped envs from a garbage-collector pass and hung at the 8th make; and the
    collector, freeing gym3's buffers in the wrong order at exit, segfaulted after 10 (or 50, not 40)."""
    need('procgen_bigfish')
    code = ('import pufferlib\n'
            f'for i in range({count}):\n'
            '    e = pufferlib.make("procgen_bigfish"); e.reset(seed=i)\n'
            'print("made them")\n')
    assert "made them" in run_python(code, timeout=120)   # run_python also asserts exit status 0


def test_procgen_buffers_freed_before_the_collector_runs():
    """The cause of the crash above, made certain: a closed gym3 env keeps no cffi export of its buffers,
    so the collector can free what is left in any order."""
    need('procgen_bigfish')
    code = ('import gc\n'
            'import pufferlib\n'
            'e = pufferlib.make("procgen_bigfish"); e.reset(seed=0)\n'
            'inner = e.env._env\n'
            'e.close()\n'
            'assert inner._c_ob_buffers is None and inner._c_rew_buffer is None, "cffi exports kept"\n'
            'cycle = [inner]; cycle.append(cycle)\n'
            'del e, inner, cycle\n'
            'gc.collect()\n'
            'print("collected")\n')
    assert 'collected' in run_python(code, timeout=120)


def test_procgen_env_closes_without_the_ffi_lock():
    """The cause of the hang above, made certain: the collector frees an unclosed env while gym3's
    shared FFI lock is held (as it is while the next env looks up its functions)."""
    need('procgen_bigfish')
    code = ('import gc\n'
            'import pufferlib\n'
            'from gym3 import libenv\n'
            'gc.disable()\n'
            'e = pufferlib.make("procgen_bigfish"); e.reset(seed=0)\n'
            'cycle = [e]; cycle.append(cycle)\n'
            'del e, cycle\n'
            'for ffi in libenv.FFI_CACHE.values():\n'
            '    with ffi._lock:\n'
            '        gc.collect()\n'
            'print("collected")\n')
    assert 'collected' in run_python(code, timeout=120)


# --- registry, names and errors --------------------------------------------------------------

def test_every_family_lists_names_without_its_packages(monkeypatch):
    for package in ('ale_py', 'cv2', 'procgen', 'gym3', 'nle', 'minihack', 'pyboy', 'minigrid', 'crafter'):
        monkeypatch.setitem(sys.modules, package, None)  # makes `import package` raise ImportError
    names = [n for family in environments.FAMILIES for n in registry.names(family)]
    assert len(names) == len(set(names))
    for family in environments.FAMILIES:
        family_names = environments.module(family).env_names()
        assert family_names, family
        for name in family_names:
            assert registry.family_of(name) == family and registry.lookup(name).family == family
            assert name in pufferlib.env_names()
    assert {'atari_breakout', 'atari_pong', 'procgen_bigfish', 'nethack', 'minihack_room', 'pokemon_red',
            'classic_cartpole', 'pettingzoo_kaz', 'minigrid_empty', 'crafter'} <= set(names)
    assert len([n for n in names if n.startswith('procgen_')]) == 16


@pytest.mark.parametrize('name,package,extra', [
    ('atari_breakout', 'ale_py', 'atari'), ('procgen_bigfish', 'procgen', 'procgen'),
    ('nethack', 'nle', 'nethack'), ('minihack_room', 'minihack', 'minihack'),
    ('minigrid_empty', 'minigrid', 'minigrid'), ('crafter', 'crafter', 'crafter'),
    ('pettingzoo_kaz', 'pymunk', 'pettingzoo'), ('pettingzoo_leduc_holdem', 'rlcard', 'pettingzoo')])
def test_missing_package_names_the_extra(monkeypatch, name, package, extra):
    monkeypatch.setitem(sys.modules, package, None)
    if package == 'procgen':
        monkeypatch.setitem(sys.modules, 'gym3', None)
    with pytest.raises(ImportError, match=rf'-e "\.\[{extra}\]" \(in your pufferlib checkout\)'):
        pufferlib.make(name)


def test_missing_pyboy_names_the_extra(monkeypatch, test_rom):
    monkeypatch.setitem(sys.modules, 'pyboy', None)
    with pytest.raises(ImportError, match=r'-e "\.\[pokemon\]" \(in your pufferlib checkout\)'):
        pufferlib.make('pokemon_red', rom_path=test_rom, check_rom=False)


def test_unknown_names_suggest_close_ones():
    with pytest.raises(APIUsageError, match='atari_breakout'):
        pufferlib.make('atari_brekout')
    with pytest.raises(APIUsageError, match='procgen_bigfish'):
        pufferlib.make('procgen_bigfsh')
    from pufferlib.environments import minihack
    with pytest.raises(APIUsageError, match='minihack_room'):
        minihack.make('minihack_rooom')


def test_pokemon_missing_rom_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv('PUFFER_POKEMON_ROM', raising=False)
    with pytest.raises(APIUsageError, match='PUFFER_POKEMON_ROM') as error:
        pufferlib.make('pokemon_red')
    assert 'rom_path' in str(error.value)
    with pytest.raises(APIUsageError, match='not found'):
        pufferlib.make('pokemon_red', rom_path=str(tmp_path / 'missing.gb'))
    monkeypatch.setenv('PUFFER_POKEMON_ROM', str(tmp_path / 'also_missing.gb'))
    with pytest.raises(APIUsageError, match='also_missing.gb'):
        pufferlib.make('pokemon_red')


def test_pokemon_wrong_rom_is_refused(monkeypatch, test_rom, tmp_path):
    with pytest.raises(APIUsageError, match="not Pokémon Red.*'PUFFER TEST'"):
        pufferlib.make('pokemon_red', rom_path=test_rom)
    monkeypatch.setenv('PUFFER_POKEMON_ROM', test_rom)
    with pytest.raises(APIUsageError, match='not Pokémon Red'):
        pufferlib.make('pokemon_red')
    short = tmp_path / 'short.gb'
    short.write_bytes(b'\x00' * 100)
    with pytest.raises(APIUsageError, match='not a Game Boy ROM'):
        pufferlib.make('pokemon_red', rom_path=str(short))


def test_pokemon_rom_with_a_bad_header_checksum_gives_our_error(tmp_path):
    """Checked before PyBoy is imported or started (it would refuse the ROM with its own traceback),
    and even with check_rom=False, which only skips the title check."""
    rom = bytearray(build_gb_rom(title=b'POKEMON RED'))
    rom[0x14D] ^= 0xFF
    path = tmp_path / 'corrupt.gb'
    path.write_bytes(bytes(rom))
    for check_rom in (True, False):
        with pytest.raises(APIUsageError, match=r'not a valid Game Boy ROM: its header checksum \(byte 0x14D\)'):
            pufferlib.make('pokemon_red', rom_path=str(path), check_rom=check_rom)


def test_pokemon_rom_that_pyboy_refuses_gives_our_error(tmp_path):
    pytest.importorskip('pyboy', reason='pip install "pufferlib[pokemon]"')
    path = tmp_path / 'odd_cartridge.gb'
    path.write_bytes(build_gb_rom(cartridge_type=0xFD))  # a valid header naming a mapper PyBoy lacks
    with pytest.raises(APIUsageError, match='PyBoy cannot load the ROM .*odd_cartridge.gb'):
        pufferlib.make('pokemon_red', rom_path=str(path), check_rom=False)


def test_pokemon_rom_from_env_var_and_title_check(monkeypatch, tmp_path):
    pytest.importorskip('pyboy', reason='pip install "pufferlib[pokemon]"')
    # A homebrew ROM that merely claims the title passes the check; its RAM reads as zeros, so no reward.
    rom = tmp_path / 'red.gb'
    rom.write_bytes(build_gb_rom(title=b'POKEMON RED', cartridge_type=0x13, ram_size=0x03))  # MBC3+RAM+battery
    monkeypatch.setenv('PUFFER_POKEMON_ROM', str(rom))
    env = pufferlib.make('pokemon_red', max_steps=20)
    env.reset(seed=0)
    total = 0.0
    for step in range(40):
        _, rewards, _, truncations, infos = env.step(np.array([step % 7]))
        total += float(rewards.sum())
    env.close()
    assert total == 0.0
    assert not list(tmp_path.glob('*.ram'))  # nothing written next to the ROM


def test_pokemon_screen_packing_round_trips():
    from pufferlib.environments import pokemon
    rng = np.random.default_rng(0)
    shades = np.array([0x00, 0x55, 0xAA, 0xFF], np.uint8)
    levels = rng.integers(0, 4, size=(144, 160))
    packed = pokemon.pack_screen(shades[levels])
    assert packed.shape == (72, 20) and packed.dtype == np.uint8
    np.testing.assert_array_equal(pokemon.unpack_screen(packed), levels[::2, ::2])
    torch = pytest.importorskip('torch')
    batch = np.stack([packed, packed[::-1]])
    np.testing.assert_array_equal(pokemon.unpack_screen(torch.from_numpy(batch)).numpy(),
                                  pokemon.unpack_screen(batch))


def test_gymnasium_checker_accepts_our_adapters(test_rom):
    from gymnasium.utils.env_checker import check_env
    checked = 0
    for package, build in (
            ('ale_py', lambda: __import__('pufferlib.environments.atari', fromlist=['x']).AtariEnv('pong')),
            ('procgen', lambda: __import__('pufferlib.environments.procgen', fromlist=['x']).ProcgenEnv('coinrun')),
            ('pyboy', lambda: __import__('pufferlib.environments.pokemon', fromlist=['x']).PokemonRedEnv(
                test_rom, check_rom=False))):
        try:
            __import__(package)
        except ImportError:
            continue
        env = build()
        check_env(env, skip_render_check=True)
        env.close()
        checked += 1
    if not checked:
        pytest.skip('none of ale-py, procgen, crafter, pyboy is installed')


@pytest.mark.slow
def test_gymnasium_checker_accepts_crafter():
    pytest.importorskip('crafter', reason='pip install "pufferlib[crafter]"')
    from gymnasium.utils.env_checker import check_env
    from pufferlib.environments.crafter import CrafterEnv
    check_env(CrafterEnv(length=50), skip_render_check=True)


def test_atari_episodic_life_and_game_score():
    pytest.importorskip('ale_py', reason='pip install "pufferlib[atari]"')
    from pufferlib.environments.atari import AtariEnv
    env = AtariEnv('breakout', repeat_action_probability=0.0)
    obs, info = env.reset(seed=3)
    assert obs.shape == (84, 84, 4) and info['lives'] == 5
    lives_lost, score = 0, None
    for step in range(5000):
        obs, reward, terminated, truncated, info = env.step(step % 4)
        if terminated or truncated:
            if 'score' in info:
                score = info['score']
                break
            lives_lost += 1
            env.reset()
    assert lives_lost == 4 and score is not None  # one learner episode per life, the score at game over
    env.close()


@pytest.mark.parametrize('frames', [4, 1])
def test_atari_observation_is_the_frame_stack_channels_last_oldest_first_in_a_fresh_array(frames):
    pytest.importorskip('ale_py', reason='pip install "pufferlib[atari]"')
    from pufferlib.environments.atari import AtariEnv
    env = AtariEnv('breakout', frame_stack=frames)
    env.reset(seed=0)
    kept = []
    for step in range(frames + 2):
        obs, *_ = env.step(step % 4)
        assert obs.shape == (84, 84, frames) and obs.flags['C_CONTIGUOUS']
        kept.append(obs)
    assert np.array_equal(kept[-1][..., -1], env._stack[-1])           # the newest frame last
    if frames > 1:
        assert np.array_equal(kept[-1][..., -2], kept[-2][..., -1])   # shifted one place per step
    kept[-1][...] = 0  # the caller's array, not the env's stack
    assert env._stack.any()
    env.close()


# --- policies --------------------------------------------------------------------------------

def test_nethack_policy_reads_the_structured_rows():
    torch = pytest.importorskip('torch')
    kwargs, _ = need('minihack_room')
    from pufferlib.environments import minihack, nethack
    vecenv = pufferlib.vector.make('minihack_room', backend='Serial', num_envs=2, env_kwargs=kwargs)
    try:
        obs, _ = vecenv.reset(seed=0)
        policy = minihack.Policy(vecenv, hidden_size=64)
        assert minihack.Policy is nethack.Policy
        logits, value = policy(torch.from_numpy(obs))
        assert logits.shape == (2, vecenv.single_action_space.n) and value.shape == (2,)
        assert torch.isfinite(logits).all()
    finally:
        vecenv.close()


def test_pokemon_policy_unpacks_on_its_side(test_rom):
    torch = pytest.importorskip('torch')
    need('pokemon_red')
    from pufferlib.environments import pokemon
    env = pufferlib.make('pokemon_red', rom_path=test_rom, check_rom=False)
    obs, _ = env.reset(seed=0)
    logits, value = pokemon.Policy(env, hidden_size=32)(torch.from_numpy(obs))
    assert logits.shape == (1, 7) and value.shape == (1,)
    env.close()


def test_bindings_import_without_torch():
    code = ('import sys; import pufferlib.environments as e\n'
            'for family in e.FAMILIES: e.module(family)\n'
            'assert "torch" not in sys.modules, "a binding imported torch"')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=ROOT)


# --- default configs for the trainer -----------------------------------------------------------

ALLOWED_SECTIONS = {'env', 'vec', 'train', 'policy', 'rnn'}


@pytest.mark.parametrize('family', list(environments.FAMILIES))
def test_every_family_has_a_default_config(family):
    path = CONFIG_DIR / f'{family}.toml'
    config = tomllib.loads(path.read_text())
    assert set(config) <= ALLOWED_SECTIONS, f'{path}: unexpected sections {set(config) - ALLOWED_SECTIONS}'
    vec = config.get('vec', {})
    if {'num_envs', 'num_workers'} <= set(vec) and 'auto' not in (vec['num_envs'], vec['num_workers']):
        assert vec['num_envs'] % vec['num_workers'] == 0
    for section in ('policy', 'rnn'):
        if section in config:
            module, _, attr = config[section]['class'].partition(':')
            assert module and attr, f'{path}: [{section}] class must look like "package.module:Class"'
            if importlib.util.find_spec('torch') is not None:  # policies need torch; configs do not
                assert callable(getattr(importlib.import_module(module), attr)), config[section]['class']


def test_atari_fire_reset_serves_the_ball_as_cleanrls_wrappers_do():
    """Breakout waits for FIRE after every lost life: with fire_reset (the default, as CleanRL's FireResetEnv) a
    policy that never fires still loses lives; without it the ball never comes and no life is lost."""
    pytest.importorskip('ale_py', reason='pip install "pufferlib[atari]"')
    from pufferlib.environments.atari import AtariEnv
    lost = {}
    for fire_reset in (True, False):
        env = AtariEnv('breakout', repeat_action_probability=0.0, fire_reset=fire_reset)
        env.reset(seed=0)
        lost[fire_reset] = 0
        for _ in range(1000):
            _, _, terminated, truncated, info = env.step(0)  # NOOP, never FIRE
            if terminated or truncated:
                lost[fire_reset] += 1
                env.reset()
        env.close()
    assert lost[True] >= 2 and lost[False] == 0, lost
    assert AtariEnv('pong').fire_reset and not AtariEnv('freeway').fire_reset  # Freeway has no FIRE
