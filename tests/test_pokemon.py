"""The Pokémon Red binding's own parts, on the homebrew walker ROM (tests/gb_rom.py), never a real game:
the decaying visit map and its packing, the exploration reward terms, the event flags (bytes in the
observation, bits on the policy's device), the wait for control, and saved states through busy frames."""
import numpy as np
import pytest

import pufferlib
import pufferlib.emulation
import pufferlib.vector
from pufferlib.pufferenv import APIUsageError

import gb_rom
from gb_rom import build_gb_rom, save_booted_state

pokemon = pytest.importorskip('pufferlib.environments.pokemon')
DOWN, LEFT, RIGHT, UP, A, B, START = range(7)


@pytest.fixture(scope='module')
def walker(tmp_path_factory):
    """busy_frames -> (rom path, a state past the boot ROM), built once each."""
    pytest.importorskip('pyboy', reason='pip install "pufferlib[pokemon]"')
    built = {}

    def build(busy_frames=0):
        if busy_frames not in built:
            folder = tmp_path_factory.mktemp(f'walker{busy_frames}')
            rom = folder / 'walker.gb'
            rom.write_bytes(build_gb_rom(walker=True, busy_frames=busy_frames))
            built[busy_frames] = (str(rom), save_booted_state(rom, folder / 'booted.state'))
        return built[busy_frames]
    return build


def make_env(walker, busy_frames=0, **kwargs):
    rom, state = walker(busy_frames)
    env = pokemon.PokemonRedEnv(rom, state_path=state, check_rom=False, **kwargs)
    env.reset(seed=0)
    return env


def player_level(obs):
    """The visit level drawn on the player's tile (row 4, column 4 of the 9x10 grid of 8x8 pixel tiles)."""
    image = pokemon.unpack_screen(obs['visits'])
    tile = image[4 * 8:5 * 8, 4 * 8:5 * 8]
    assert (tile == tile[0, 0]).all()
    return int(tile[0, 0])


# ---- the visit map ----

def test_levels_pack_and_unpack_like_the_screen():
    rng = np.random.default_rng(0)
    levels = rng.integers(0, 4, size=(72, 80)).astype(np.uint8)
    packed = pokemon.pack_levels(levels)
    assert packed.shape == (72, 20) and packed.dtype == np.uint8
    np.testing.assert_array_equal(pokemon.unpack_screen(packed), levels)


def test_visit_map_renders_around_the_player():
    visits = pokemon.VisitMap(decay=1.0)
    for tile, times in (((3, 10, 10), 1), ((3, 11, 10), 3), ((3, 10, 12), 1), ((4, 10, 9), 5), ((3, 20, 20), 1)):
        for _ in range(times):
            visits.visit(tile)
    grid = visits.levels(3, 10, 10)
    expected = np.zeros((9, 10), np.uint8)
    expected[4, 4] = 2    # the player's tile, once: 1 is in [0.5, 2)
    expected[4, 5] = 3    # one to the right, 3 times
    expected[6, 4] = 2    # two below
    np.testing.assert_array_equal(grid, expected)  # map 4's tile and the far one are not on screen
    image = pokemon.unpack_screen(visits.render(3, 10, 10))
    np.testing.assert_array_equal(image, np.repeat(np.repeat(expected, 8, axis=0), 8, axis=1))


def test_visit_counts_decay_per_step():
    visits = pokemon.VisitMap(decay=0.5)
    visits.visit((0, 5, 5))
    seen = []
    for _ in range(5):
        seen.append(int(visits.levels(0, 5, 5)[4, 4]))
        visits.tick()
    assert seen == [2, 2, 1, 1, 0]  # counts 1, 0.5, 0.25, 0.125, 0.0625 against the levels 0.1, 0.5, 2
    assert visits.count((0, 5, 5)) == pytest.approx(0.5 ** 5)
    assert visits.visit((0, 5, 5)) == pytest.approx(0.5 ** 5)  # a visit returns the count before it
    assert visits.count((0, 5, 5)) == pytest.approx(1 + 0.5 ** 5)


def test_visit_counts_survive_the_rescale():
    """A fast decay takes the scale below RESCALE_BELOW within a few dozen steps: the counts stay right."""
    visits = pokemon.VisitMap(decay=1e-3)
    for step in range(80):
        visits.visit((0, step, 0))
        visits.tick()
        assert pokemon.VisitMap.RESCALE_BELOW <= visits.scale <= 1.0
    assert visits.count((0, 79, 0)) == pytest.approx(1e-3)
    assert visits.count((0, 78, 0)) == pytest.approx(1e-6)
    assert visits.visit((0, 79, 0)) == pytest.approx(1e-3)
    assert visits.count((0, 79, 0)) == pytest.approx(1 + 1e-3)


def test_visit_map_in_the_observation_decays(walker):
    env = make_env(walker, visit_decay=0.5)
    obs, _ = env.reset(seed=0)
    levels = [player_level(obs)]
    for _ in range(4):
        obs, *_ = env.step(B)  # B moves nobody: the start tile's count halves every step
        levels.append(player_level(obs))
    assert levels == [2, 2, 1, 1, 0]
    obs, *_ = env.step(RIGHT)
    assert player_level(obs) == 2  # the new tile, just visited
    grid = pokemon.unpack_screen(obs['visits'])[::8, ::8]
    assert grid[4, 3] == 0 and grid.sum() == 2  # the start tile, one to the left, is forgotten
    env.close()


# ---- the exploration reward ----

def test_new_tiles_pay_the_weight_and_revisits_less(walker):
    env = make_env(walker, explore_weight=1.0, visit_decay=0.9, max_steps=5)
    rewards, info = [], {}
    for action in (RIGHT, LEFT, RIGHT, B, DOWN):
        _, reward, _, truncated, info = env.step(action)
        rewards.append(reward)
    back = 1 / (1 + 0.9 ** 2)  # the start tile was visited (at the reset) two steps of decay before
    assert rewards[0] == pytest.approx(1.0)
    assert rewards[1] == pytest.approx(back) and rewards[1] < rewards[0]
    assert rewards[2] == pytest.approx(back)  # the first new tile, two steps ago
    assert rewards[3] == pytest.approx(0.1)  # standing still pays no exploration; B sets an event flag
    assert rewards[4] == pytest.approx(1.0)
    assert truncated
    assert info['reward_explore_new'] == pytest.approx(2.0)
    assert info['reward_explore_revisit'] == pytest.approx(2 * back)
    assert info['reward_events'] == pytest.approx(0.1) and info['events'] == 1
    assert info['reward_badges'] == info['reward_party_level'] == 0
    assert info['tiles_visited'] == 3
    assert sum(info[f'reward_{term}'] for term in pokemon.TERMS) == pytest.approx(sum(rewards))
    env.close()


def test_episode_stats_reach_the_vector_env(walker):
    rom, state = walker(0)
    kwargs = dict(rom_path=rom, state_path=state, check_rom=False, max_steps=4)
    with pufferlib.vector.make('pokemon_red', backend='Serial', num_envs=1, env_kwargs=kwargs) as vecenv:
        vecenv.reset(seed=0)
        infos = []
        for _ in range(4):
            infos += vecenv.step(np.array([RIGHT], vecenv.action_dtype))[4]
    [info] = infos
    assert info['reward_explore_new'] == pytest.approx(4 * 0.02) and info['episode_length'] == 4


def test_explore_weight_is_not_a_reward_weights_key(walker):
    rom, state = walker(0)
    with pytest.raises(APIUsageError, match="unknown reward_weights keys \\['explored'\\].*explore_weight option"):
        pufferlib.make('pokemon_red', rom_path=rom, check_rom=False, reward_weights={'explored': 1.0})
    with pytest.raises(APIUsageError, match=r'visit_decay must be in \(0, 1\]'):
        pokemon.PokemonRedEnv(rom, check_rom=False, visit_decay=0.0)  # the class checks its options too


# ---- event flags ----

def test_event_flags_are_raw_bytes_in_the_observation(walker):
    env = make_env(walker)
    for action in (A, A, B, A, B, B, B):
        obs, *_ = env.step(action)
    events = obs['events']
    assert events.shape == (320,) and events.dtype == np.uint8
    assert events[0] == 3 and events[-1] == 4 and not events[1:-1].any()  # 0xD747 and 0xD886
    flags = pokemon.unpack_events(events)
    assert flags.shape == (2560,) and flags.sum() == 2 + 1  # 3 = 0b11, 4 = 0b100
    env.close()


def test_event_flags_unpack_on_torch_as_numpy_does():
    torch = pytest.importorskip('torch')
    packed = np.random.default_rng(1).integers(0, 256, size=(2, 5, 320), dtype=np.uint8)
    expected = np.unpackbits(packed, axis=-1)
    np.testing.assert_array_equal(pokemon.unpack_events(packed), expected)
    devices = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
    for device in devices:
        bits = pokemon.unpack_events(torch.from_numpy(packed).to(device))
        assert bits.device.type == device and bits.dtype == torch.uint8
        np.testing.assert_array_equal(bits.cpu().numpy(), expected)


def test_policy_reads_all_three_parts(walker):
    torch = pytest.importorskip('torch')
    rom, state = walker(0)
    env = pufferlib.make('pokemon_red', rom_path=rom, state_path=state, check_rom=False)
    obs, _ = env.reset(seed=0)
    policy = pokemon.Policy(env, hidden_size=32)
    rows = torch.from_numpy(np.repeat(obs, 2, axis=0))
    events = pufferlib.emulation.Nativizer(env.obs_dtype)(rows)['events']
    events[1, 0] = 0x80  # one flag set in the second row only
    hidden = policy.encode_observations(rows)
    assert hidden.shape == (2, 32) and not torch.equal(hidden[0], hidden[1])
    env.close()


# ---- waiting for control ----

def test_presses_during_busy_frames_are_not_lost(walker):
    """The walker ignores the joypad for 40 frames after a press; an action lasts 24. Waiting for control
    lands every action's press; without the wait, every other one falls into the busy frames."""
    actions = [RIGHT, RIGHT, DOWN, A, RIGHT, UP, A, LEFT, DOWN, DOWN]
    for max_wait_ticks in (2400, 0):
        env = make_env(walker, busy_frames=40, max_wait_ticks=max_wait_ticks)
        mem = env.memory
        for action in actions:
            before = env.pyboy.frame_count
            env.step(action)
            frames = env.pyboy.frame_count - before
            if max_wait_ticks:
                assert not mem[gb_rom.JOY_IGNORE] and frames == 48  # the action, one block of waiting
            else:
                assert frames == 24
        if max_wait_ticks:
            assert mem[gb_rom.PRESSES] == len(actions)
            assert (mem[gb_rom.PLAYER_X], mem[gb_rom.PLAYER_Y]) == (gb_rom.START_X + 2, gb_rom.START_Y + 2)
            assert mem[gb_rom.EVENT_FIRST] == 2  # the A taps while waiting fell into busy frames: not counted
        else:
            assert mem[gb_rom.PRESSES] == len(actions) // 2
        env.close()


@pytest.mark.parametrize('advance_text', [True, False])
def test_the_wait_stops_at_max_wait_ticks(walker, advance_text):
    env = make_env(walker, busy_frames=255, max_wait_ticks=50, advance_text=advance_text)
    for _ in range(3):
        before = env.pyboy.frame_count
        _, _, _, _, _ = env.step(RIGHT)
        assert env.pyboy.frame_count - before == 24 + 50
    assert env.memory[gb_rom.JOY_IGNORE]  # still busy: the cap, not the game, ended each wait
    assert env.memory[gb_rom.PRESSES] == 1  # the 2nd and 3rd presses came while busy
    assert env.episode_stats()['wait_ticks'] == 150
    env.close()


# ---- saved states ----

@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
def test_states_round_trip_through_busy_frames(walker, backend):
    """test_env_states' round trip (save a game, load it into another env and another vector, same
    observations, rewards and ends for every step) on the walker that waits for control, episodes
    ending inside the run."""
    from test_env_states import check_round_trip
    rom, state = walker(30)
    check_round_trip('pokemon_red', backend, steps=40, env_kwargs=dict(
        rom_path=rom, state_path=state, check_rom=False, max_steps=30, visit_decay=0.9))


def test_a_loaded_state_shows_and_continues_the_same(walker):
    """Env level: the loaded env's observation is the saver's (screen, visit map, flags), its steps match,
    and a state of other options is refused."""
    a = make_env(walker, busy_frames=30, visit_decay=0.9)
    b = make_env(walker, busy_frames=30, visit_decay=0.9)
    for action in (RIGHT, RIGHT, A, DOWN, LEFT, B):
        obs_a, *_ = a.step(action)
    loaded = b.set_state(a.get_state())
    for key in ('screen', 'visits', 'events'):
        np.testing.assert_array_equal(loaded[key], obs_a[key])
    for action in (UP, UP, RIGHT, A, LEFT, LEFT, DOWN):
        obs_a, reward_a, *_ = a.step(action)
        obs_b, reward_b, *_ = b.step(action)
        assert reward_a == reward_b
        for key in ('screen', 'visits', 'events'):
            np.testing.assert_array_equal(obs_a[key], obs_b[key])
    assert a.state_identity() == b.state_identity()
    other = make_env(walker, busy_frames=30, visit_decay=0.5)
    assert other.state_identity() != a.state_identity()  # the emulation refuses a state of other options
    for env in (a, b, other):
        env.close()
