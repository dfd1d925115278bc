"""Ocean games with rules to check: puffer_go, puffer_tripletriad, puffer_trash_pickup, puffer_keyrooms.

tests/test_ocean.py runs the Ocean contract checks (determinism, spaces, clamping, rendering, logs,
sanitizers) on every env's defaults; this file runs them on the modes whose layout or flow differs
(two seats, other sizes), checks each game's rules against a small independent Python model, the
action masks, the turn-based two-seat convention, and the scripted policies' scores. Nothing here
times anything (speed lives in scripts/lab/bench_ocean.py). `scripts/sanitize_ocean.sh
tests/test_ocean_games.py` adds these modes to the sanitizer run.
"""
import os

import numpy as np
import pytest

import pufferlib
import pufferlib.vector
from pufferlib.ocean import keyrooms, tools
from pufferlib.ocean.go import scripted_policy as go_policy
from pufferlib.ocean.trash_pickup import scripted_policy as trash_policy
from pufferlib.ocean.tripletriad import TO_MOVE as TT_TO_MOVE, scripted_policy as tt_policy
from pufferlib.pufferenv import APIUsageError, StateError
from test_ocean import assert_deterministic, rollout, rollout_raw
from test_ocean import test_sanitized_100k_random_steps as sanitized_run

# (name, options): the modes tests/test_ocean.py does not run (it runs the defaults)
VARIANTS = [('go', {'size': 9}), ('go', {'two_player': True}), ('go', {'size': 5, 'seat': 1}),
            ('tripletriad', {'two_player': True}), ('tripletriad', {'seat': 0}),
            ('trash_pickup', {'size': 6, 'agents': 5, 'trash': 20, 'bins': 1, 'sight': 2}),
            ('keyrooms', {'rooms_x': 3, 'rooms_y': 2, 'room_size': 3, 'num_keys': 2, 'max_steps': 100})]
IDS = [name + ''.join(f',{k}={v}' for k, v in options.items()) for name, options in VARIANTS]
SANITIZED = bool(os.environ.get('PUFFER_OCEAN_LIB'))


def make(name, num_envs=2, seed=0, **options):
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **options)


def play(env, policy, steps, seed=1):
    """Finished-episode means of perf and score under `policy(env, obs, rng)` (None: uniform random)."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    logs = []
    for _ in range(steps):
        if policy is None:
            actions = rng.integers(0, env.single_action_space.n, env.num_agents).astype(np.int32)
        else:
            actions = policy(env, obs, rng)
        obs, _, _, _, infos = env.step(actions)
        logs.extend(infos)
    last = env.log()
    logs += [last] if last else []
    n = sum(log['n'] for log in logs)
    assert n > 0, 'no episode finished'
    return {key: sum(log[key] * log['n'] for log in logs) / n for key in ('perf', 'score')}


# ---------------------------------------------------------------------------------------------
# The Ocean contract, for every variant
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_layout_and_spaces(name, options):
    env = make(name, num_envs=3, **options)
    agents, obs_size, act_size, itemsize = env._binding.vec_layout(env._handle)
    assert agents == env.agents_per_env and env.num_agents == 3 * agents
    assert obs_size == int(np.prod(env.single_observation_space.shape))
    assert itemsize == env.single_observation_space.dtype.itemsize and act_size == 1
    env.close()


@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_deterministic_under_a_seed_and_seeds_differ(name, options):
    # Two-seat Go draws nothing at random; keyrooms' layout is layout_seed's, the same under every seed.
    seedless = (name, options) == ('go', {'two_player': True}) or name == 'keyrooms'
    assert_deterministic(lambda seed: make(name, 3, seed, **options), 2000, other_seed_differs=not seedless)


@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_observations_stay_in_space_and_episodes_end(name, options):
    env = make(name, num_envs=8, seed=11, **options)
    low, high = env.single_observation_space.low, env.single_observation_space.high
    pool = tools.random_actions(env.single_action_space, env.num_agents, 256, seed=5)
    episodes = 0
    for t in range(100_000 // (8 * env.agents_per_env)):
        obs, rewards, terminals, truncations, _ = env.step(pool[t % 256])
        assert ((obs >= low) & (obs <= high)).all(), f'step {t}: observation outside the space'
        assert np.isfinite(rewards).all() and not (terminals & truncations).any()
        episodes += int(terminals.sum() + truncations.sum())
    assert episodes > 0
    env.close()


@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_out_of_range_actions_are_clamped(name, options):
    wild, tame = make(name, 2, 5, **options), make(name, 2, 5, **options)
    rng = np.random.default_rng(0)
    shape = (1500, wild.num_agents)
    extremes = np.array([np.iinfo(np.int32).min, -1_000_000, -1, 0, 1, 44, 45, 49, 50, 81, 82, np.iinfo(np.int32).max])
    actions = np.where(rng.random(shape) < 0.5, rng.choice(extremes, size=shape),
                       rng.integers(-5, 90, size=shape)).astype(np.int32)
    clipped = np.clip(actions, 0, wild.single_action_space.n - 1).astype(np.int32)
    for x, y in zip(rollout_raw(wild, actions), rollout(tame, clipped)):  # step() refuses them; the buffer need not
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_render_frame_and_text(name, options):
    env = make(name, num_envs=2, **options)
    for _ in range(5):
        env.step(tools.random_actions(env.single_action_space, env.num_agents, 1)[0])
    h, w = env._binding.vec_frame_shape(env._handle)
    frame = env.render()
    assert frame.shape == (h, w, 3) and frame.dtype == np.uint8 and len(np.unique(frame.reshape(-1, 3), axis=0)) > 2
    assert env.render(index=1).shape == frame.shape
    assert env.render_text().strip() and env.render_text(index=1).strip()
    with pytest.raises(APIUsageError):
        env.render(index=2)


@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_logs_reach_infos(name, options):
    env = make(name, num_envs=4, **options)
    pool = tools.random_actions(env.single_action_space, env.num_agents, 64)
    infos = []
    for t in range(4096):
        infos.extend(env.step(pool[t % 64])[4])
    assert infos
    for info in infos:
        own = {field for field, _ in pufferlib.ocean.spec_of(name).log_fields}  # the spec's [[log]] fields
        assert set(info) == {'episode_return', 'episode_length', 'score', 'perf', 'n'} | own
        assert info['n'] >= 1 and info['episode_length'] >= 1 and 0 <= info['perf'] <= 1


@pytest.mark.parametrize('name, change, match', [
    ('go', {'size': 4}, 'size=4 is outside'),
    ('go', {'size': 11}, 'size=11 is outside'),
    ('go', {'seat': 2}, 'seat=2 is outside'),
    ('go', {'komi': 'half'}, 'komi must be float'),
    ('tripletriad', {'max_rank': 11}, 'max_rank=11 is outside'),
    ('tripletriad', {'seats': 2}, "unknown option 'seats'"),
    ('trash_pickup', {'size': 3, 'trash': 8}, r'need a cell each \(got agents=3, trash=8, bins=2, size=3\)'),
    ('trash_pickup', {'sight': 0}, 'sight=0 is outside'),
])
def test_bad_options_name_the_key(name, change, match):
    with pytest.raises(APIUsageError, match=match):
        make(name, **change)


@pytest.mark.sanitize
@pytest.mark.skipif(not SANITIZED, reason='needs the sanitizer build: scripts/sanitize_ocean.sh')
@pytest.mark.parametrize('name, options', VARIANTS, ids=IDS)
def test_sanitized_100k_random_steps(name, options):
    """tests/test_ocean.py's sanitized run (wild and random actions, rendering) on the option variants."""
    sanitized_run(name, options)


# ---------------------------------------------------------------------------------------------
# Go: every observation plane against an independent Python model of the rules
# ---------------------------------------------------------------------------------------------

class GoModel:
    """Plain Go on a list-of-lists board: 0 empty, 1 black, 2 white; simple ko; suicide illegal."""

    def __init__(self, size, komi):
        self.size, self.komi = size, komi
        self.board = [[0] * size for _ in range(size)]
        self.ko, self.to_move, self.passes, self.moves = None, 1, 0, 0

    def neighbors(self, r, c):
        return [(r + dr, c + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                if 0 <= r + dr < self.size and 0 <= c + dc < self.size]

    def group(self, board, r, c):
        color, stones, libs, todo = board[r][c], {(r, c)}, set(), [(r, c)]
        while todo:
            for q in self.neighbors(*todo.pop()):
                if board[q[0]][q[1]] == 0:
                    libs.add(q)
                elif board[q[0]][q[1]] == color and q not in stones:
                    stones.add(q)
                    todo.append(q)
        return stones, libs

    def try_play(self, color, r, c):
        """(board after the move, captured stones) or None if illegal."""
        if self.board[r][c] or (r, c) == self.ko:
            return None
        board = [row[:] for row in self.board]
        board[r][c] = color
        captured = set()
        for q in self.neighbors(r, c):
            if board[q[0]][q[1]] == 3 - color:
                stones, libs = self.group(board, *q)
                if not libs:
                    captured |= stones
        for q in captured:
            board[q[0]][q[1]] = 0
        if not self.group(board, r, c)[1]:
            return None
        return board, captured

    def legal(self, color):
        return {(r, c) for r in range(self.size) for c in range(self.size) if self.try_play(color, r, c)}

    def play(self, point):
        color = self.to_move
        result = self.try_play(color, *point) if point is not None else None
        if result is None:
            self.ko, self.passes = None, self.passes + 1
        else:
            board, captured = result
            stones, libs = self.group(board, *point)
            single = len(captured) == 1 and len(stones) == 1 and libs == captured
            self.board, self.ko, self.passes = board, next(iter(captured)) if single else None, 0
        self.to_move, self.moves = 3 - color, self.moves + 1

    def margin(self):
        """Black's area (stones + regions touching only black) minus white's, minus komi."""
        score, seen = {1: 0, 2: 0}, set()
        for r in range(self.size):
            for c in range(self.size):
                if self.board[r][c]:
                    score[self.board[r][c]] += 1
                elif (r, c) not in seen:
                    region, borders, todo = {(r, c)}, set(), [(r, c)]
                    while todo:
                        for q in self.neighbors(*todo.pop()):
                            v = self.board[q[0]][q[1]]
                            if v:
                                borders.add(v)
                            elif q not in region:
                                region.add(q)
                                todo.append(q)
                    seen |= region
                    if len(borders) == 1:
                        score[borders.pop()] += len(region)
        return score[1] - score[2] - self.komi

    def planes(self, color):
        """mine, theirs, legal, capture, atari planes as the env writes them for `color` (1 or 2)."""
        n = self.size
        mine = np.array([[v == color for v in row] for row in self.board], dtype=np.float32)
        theirs = np.array([[v == 3 - color for v in row] for row in self.board], dtype=np.float32)
        legal, capture, atari = (np.zeros((n, n), np.float32) for _ in range(3))
        if self.to_move == color:
            for r, c in self.legal(color):
                legal[r, c] = 1
                capture[r, c] = bool(self.try_play(color, r, c)[1])
        for r in range(n):
            for c in range(n):
                if self.board[r][c] == color and len(self.group(self.board, r, c)[1]) == 1:
                    atari[r, c] = 1
        return np.stack([mine, theirs, legal, capture, atari])


@pytest.mark.parametrize('size', [5, 7, 9])
def test_go_matches_a_python_model_of_the_rules(size):
    """Random games in two-player mode; after every move both rows' planes, scalars, rewards and
    terminals agree with the model (legal moves, captures, ataris, ko, suicide, area score)."""
    env = make('go', num_envs=1, seed=size, size=size, two_player=True, max_moves=2 * size * size, margin_reward=0.0)
    rng = np.random.default_rng(size)
    n, games, kos, suicides, illegal_played = size * size, 0, 0, 0, 0
    model = GoModel(size, 7.5)
    env.reset(seed=size)
    for step in range({5: 1000, 7: 700, 9: 450}[size]):
        color = model.to_move
        legal = sorted(model.legal(color))
        empty = [(r, c) for r in range(size) for c in range(size) if model.board[r][c] == 0]
        kos += model.ko is not None
        suicides += any(model.try_play(color, *p) is None and p != model.ko for p in empty)
        roll = rng.random()
        if roll < 0.03 or not legal:
            point, action = None, n
        elif roll < 0.08 and len(legal) < n:  # an illegal move: an occupied point, or an empty one that is illegal
            bad = [(r, c) for r in range(size) for c in range(size) if (r, c) not in set(legal)]
            point = bad[rng.integers(len(bad))]
            action, illegal_played = point[0] * size + point[1], illegal_played + 1
        else:
            point = legal[rng.integers(len(legal))]
            action = point[0] * size + point[1]
        actions = np.zeros(2, dtype=np.int32)
        actions[color - 1] = action
        actions[2 - color] = rng.integers(n + 1)  # the waiting row's action is ignored
        obs, rewards, terminals, _, _ = env.step(actions)
        model.play(point)
        was_illegal = point is not None and point not in set(legal)
        over = model.passes >= 2 or model.moves >= 2 * n
        if over:
            result = 1.0 if model.margin() > 0 else -1.0
            expect = np.array([result, -result]) + (np.eye(2)[color - 1] * -0.1 if was_illegal else 0)
            np.testing.assert_allclose(rewards, expect, atol=1e-6)
            assert terminals.all()
            games += 1
            model = GoModel(size, 7.5)
            continue
        assert not terminals.any()
        np.testing.assert_allclose(rewards, np.eye(2)[color - 1] * (-0.1 if was_illegal else 0.0), atol=1e-6)
        for row, me in ((0, 1), (1, 2)):
            planes = obs[row, :5 * n].reshape(5, size, size)
            np.testing.assert_array_equal(planes, model.planes(me), err_msg=f'step {step}, row {row}')
            mask = env.action_masks[row]
            if model.to_move == me:  # the legal points and pass
                np.testing.assert_array_equal(mask[:n], planes[2].reshape(n) > 0)
                assert mask[n]
            else:  # the waiting row: action 0 only
                assert mask[0] and mask.sum() == 1
            scalars = obs[row, 5 * n:]
            assert scalars[0] == (me == 1) and scalars[1] == (model.to_move == me)
            margin = model.margin() * (1 if me == 1 else -1) / n
            assert scalars[4] == pytest.approx(np.clip(margin, -2, 2), abs=1e-5)
    assert games >= 2 and kos >= 1 and suicides >= 1 and illegal_played >= 10


def test_go_ko_by_hand():
    """A ko on a 5x5 board:   . X O . .   white plays (1,1) and captures the black stone at (1,2)
                              X . X O .   with a lone stone whose only liberty is (1,2): black may
                              . X O . .   not retake at once (a retake is a pass that costs
    illegal_reward), but may after a move elsewhere."""
    env = make('go', num_envs=1, size=5, two_player=True, illegal_reward=-0.25, margin_reward=0.0)
    env.reset(seed=0)
    at = lambda r, c: r * 5 + c  # noqa: E731
    for b, w in zip([at(0, 1), at(1, 0), at(2, 1), at(1, 2)], [at(0, 2), at(1, 3), at(2, 2), at(1, 1)]):
        env.step(np.array([b, 0], dtype=np.int32))
        env.step(np.array([0, w], dtype=np.int32))
    black = env.observations[0, :5 * 25].reshape(5, 5, 5)  # black's view: mine, theirs, legal, capture, atari
    assert black[1, 1, 1] == 1 and black[0, 1, 2] == 0, 'white (1,1) captured black (1,2)'
    assert black[2, 1, 2] == 0 and black[2, 0, 0] == 1, 'the immediate retake is the ko: illegal'
    assert '*' in env.render_text()
    _, rewards, terminals, _, _ = env.step(np.array([at(1, 2), 0], dtype=np.int32))  # retake anyway
    assert rewards.tolist() == [-0.25, 0.0] and not terminals.any()
    assert env.observations[0, at(1, 2)] == 0, 'the illegal retake was played as a pass'
    env.step(np.array([0, at(4, 4)], dtype=np.int32))  # white plays elsewhere
    black = env.observations[0, :5 * 25].reshape(5, 5, 5)
    assert black[2, 1, 2] == 1 and black[3, 1, 2] == 1, 'now black may retake, and it captures'


def test_go_suicide_is_illegal():
    """Black (0,0) would have no liberty and capture nothing: illegal; a multi-stone suicide too."""
    env = make('go', num_envs=1, size=5, two_player=True)
    env.reset(seed=0)
    at = lambda r, c: r * 5 + c  # noqa: E731
    for b, w in zip([at(4, 4), at(4, 3), at(3, 3)], [at(0, 1), at(1, 0), at(1, 1)]):
        env.step(np.array([b, 0], dtype=np.int32))
        env.step(np.array([0, w], dtype=np.int32))
    black = env.observations[0, :5 * 25].reshape(5, 5, 5)
    assert black[2, 0, 0] == 0, 'single-stone suicide'
    env.step(np.array([at(2, 0), 0], dtype=np.int32))  # black (2,0): atari-free elsewhere
    env.step(np.array([0, at(0, 0)], dtype=np.int32))  # white fills its own eye-ish point: legal, it has liberties
    white = env.observations[1, :5 * 25].reshape(5, 5, 5)
    assert white[0, 0, 0] == 1


def test_go_two_passes_end_the_game_by_area_score():
    env = make('go', num_envs=1, size=5, two_player=True, komi=0.5, margin_reward=0.0)
    env.reset(seed=0)
    env.step(np.array([12, 0], dtype=np.int32))  # black takes the centre: the whole board is black's area
    _, rewards, terminals, _, _ = env.step(np.array([0, 25], dtype=np.int32))  # white passes
    assert not terminals.any()
    _, rewards, terminals, _, _ = env.step(np.array([25, 0], dtype=np.int32))  # black passes: game over
    assert terminals.all() and rewards.tolist() == [1.0, -1.0]
    log = env.log()
    assert log['n'] == 2 and log['perf'] == 0.5 and log['score'] == 0.0  # +24.5 and -24.5


def test_go_margin_reward_sums_to_the_margin_change():
    """Per game, the agent's rewards add up to the result plus margin_reward * (final margin -
    starting margin) / points, the starting margin of black on an empty board being -komi."""
    weight, komi, size = 2.0, 7.5, 7
    env = make('go', num_envs=1, seed=0, seat=0, margin_reward=weight, komi=komi)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    env.log()
    total, games = 0.0, 0
    while games < 5:
        _, rewards, terminals, _, _ = env.step(masked_random(env, rng))
        total += float(rewards[0])
        if terminals[0]:
            log = env.log()
            result = 1.0 if log['score'] > 0 else -1.0
            assert log['n'] == 1
            assert total == pytest.approx(result + weight * (log['score'] + komi) / (size * size), abs=1e-4)
            assert log['episode_return'] == pytest.approx(total, abs=1e-4)
            total, games = 0.0, games + 1


def test_go_scripted_player_beats_random_and_ties_itself():
    assert play(make('go', num_envs=8), None, 1500)['perf'] < 0.05
    even = play(make('go', num_envs=16), go_policy, 1200)['perf']
    assert 0.3 < even < 0.7, even


def test_go_max_moves_caps_a_game():
    env = make('go', num_envs=1, size=5, max_moves=6, seat=0)
    env.reset(seed=0)
    ends = [env.step(np.array([a], dtype=np.int32))[2][0] for a in (0, 4, 20)]
    assert ends == [False, False, True]  # 3 agent moves + 3 opponent moves = 6 plies


# ---------------------------------------------------------------------------------------------
# Triple Triad
# ---------------------------------------------------------------------------------------------

def tt_decode(row):
    """(owner per cell: 1 mine, -1 theirs, 0 empty; ranks per cell; my hand; their hand), ranks x max_rank."""
    board = row[:54].reshape(9, 6)
    owner = np.where(board[:, 0] > 0.5, 1, np.where(board[:, 1] > 0.5, -1, 0))
    hands = row[54:104].reshape(2, 5, 5)
    return owner, np.rint(board[:, 2:] * 10).astype(int), hands[0], hands[1]


def test_tripletriad_matches_a_python_model_of_the_rules():
    """Random legal games in two-player mode: every placement turns exactly the adjacent opposing
    cards with a lower facing rank; the winner is paid +1, the loser -1."""
    from pufferlib.ocean.tripletriad import NEIGHBORS
    env = make('tripletriad', num_envs=1, two_player=True)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    games = flips_seen = 0
    obs = env.observations.copy()
    for _ in range(3000):
        player = 0 if obs[0, TT_TO_MOVE] > 0.5 else 1
        assert obs[1 - player, TT_TO_MOVE] < 0.5
        owner, ranks, mine, _ = tt_decode(obs[player])
        slots = np.flatnonzero(mine[:, 0] > 0.5)
        cells = np.flatnonzero(owner == 0)
        slot, cell = rng.choice(slots), rng.choice(cells)
        card = np.rint(mine[slot, 1:] * 10).astype(int)
        expected = owner.copy()
        expected[cell] = 1
        for d, j in enumerate(NEIGHBORS[cell]):
            if j >= 0 and owner[j] == -1 and card[d] > ranks[j, (d + 2) % 4]:
                expected[j] = 1
                flips_seen += 1
        actions = np.zeros(2, dtype=np.int32)
        actions[player] = slot * 9 + cell
        actions[1 - player] = rng.integers(45)  # ignored
        new, rewards, terminals, _, _ = env.step(actions)
        if terminals.any():
            assert terminals.all()
            mine_count = (expected == 1).sum() + (0 if player == 0 else 1)  # player 1 keeps a card
            diff = mine_count - (10 - mine_count)
            assert rewards[player] == np.sign(diff) and rewards[1 - player] == -np.sign(diff)
            games += 1
        else:
            np.testing.assert_array_equal(tt_decode(new[player])[0], expected)
            np.testing.assert_array_equal(tt_decode(new[1 - player])[0], -expected)
            assert rewards.tolist() == [0.0, 0.0]
        obs = new.copy()
    assert games > 200 and flips_seen > 100


@pytest.mark.parametrize('options', [{'two_player': True}, {}], ids=['two_player', 'one_row'])
def test_tripletriad_hints_match_the_rules(options):
    """gain = cards an action turns now; risk = exposed sides some card in the opponent's hand beats.
    (The C env computes them four lanes at a time; this recomputes every one from the board.)"""
    from pufferlib.ocean.tripletriad import NEIGHBORS
    env = make('tripletriad', num_envs=1, **options)
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(300):
        for row in range(env.num_agents):
            obs = env.observations[row]
            gain = obs[TT_TO_MOVE + 4:TT_TO_MOVE + 49].reshape(9, 5)  # cell-major
            risk = obs[TT_TO_MOVE + 49:].reshape(9, 5)
            if obs[TT_TO_MOVE] < 0.5:
                assert not gain.any() and not risk.any()
                continue
            owner, ranks, mine, theirs = tt_decode(obs)
            best = [max([np.rint(card[1 + d] * 10) for card in theirs if card[0] > 0.5] or [0]) for d in range(4)]
            for slot in range(5):
                for cell in range(9):
                    if mine[slot, 0] < 0.5 or owner[cell] != 0:
                        assert gain[cell, slot] == 0 and risk[cell, slot] == 0
                        continue
                    card = np.rint(mine[slot, 1:] * 10)
                    turns = sum(1 for d, j in enumerate(NEIGHBORS[cell])
                                if j >= 0 and owner[j] == -1 and card[d] > ranks[j, (d + 2) % 4])
                    exposed = sum(1 for d, j in enumerate(NEIGHBORS[cell])
                                  if j >= 0 and owner[j] == 0 and j != cell and best[(d + 2) % 4] > card[d])
                    assert gain[cell, slot] == turns / 4 and risk[cell, slot] == exposed / 4, (slot, cell)
                    checked += 1
        env.step(masked_random(env, rng))
    assert checked > 1000


def test_tripletriad_illegal_action_plays_the_first_legal_one():
    env = make('tripletriad', num_envs=1, seat=0, illegal_reward=-0.5)
    env.reset(seed=0)
    obs, rewards, _, _, _ = env.step(np.array([4 * 9 + 4], dtype=np.int32))  # slot 4 on the centre
    assert rewards[0] == 0
    first_empty = int(np.flatnonzero(tt_decode(obs[0])[0] == 0)[0])
    obs, rewards, _, _, _ = env.step(np.array([4 * 9 + first_empty], dtype=np.int32))  # slot 4 again: illegal
    assert rewards[0] == pytest.approx(-0.5)
    owner, _, mine, _ = tt_decode(obs[0])
    assert mine[0, 0] == 0 and mine[1:4, 0].all(), 'slot 0 was played instead'
    assert owner[first_empty] != 0, 'on the first empty cell'


def test_tripletriad_scripted_scores():
    random = play(make('tripletriad', num_envs=64), None, 1500)['perf']
    greedy = play(make('tripletriad', num_envs=64), tt_policy, 300)['perf']
    assert random < 0.2 and 0.25 < greedy < 0.45 and greedy > 2 * random


# ---------------------------------------------------------------------------------------------
# Two seats (the turn-based convention of ocean/kuhn/, docs/ocean.md)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['go', 'tripletriad'])
def test_two_player_rows_alternate_and_the_waiting_row_is_ignored(name):
    """ocean/seats.h's convention: one live row per env (env.masks), the waiting row's action mask is
    action 0 alone and its action changes nothing, a game end pays and terminates both rows."""
    a, b = make(name, num_envs=2, seed=3, two_player=True), make(name, num_envs=2, seed=3, two_player=True)
    n = a.single_action_space.n
    rng = np.random.default_rng(0)
    only_zero = np.eye(n, dtype=bool)[0]
    ends = 0
    for _ in range(400):
        actions = rng.integers(n, size=4).astype(np.int32)
        to_move = a.observations[:, TT_TO_MOVE if name == 'tripletriad' else 5 * a.config['size'] ** 2 + 1] > 0.5
        assert (to_move.reshape(2, 2).sum(1) == 1).all(), 'exactly one row of each env is to move'
        np.testing.assert_array_equal(a.masks, to_move)
        assert (a.action_masks[~to_move] == only_zero).all()
        assert a.action_masks[to_move].any(1).all()
        other = actions.copy()
        other[~to_move] = rng.integers(n, size=int((~to_move).sum()))
        ra, rb = rollout(a, [actions]), rollout(b, [other])
        for x, y in zip(ra, rb):
            np.testing.assert_array_equal(x, y)
        rewards, terminals = ra[1][0].reshape(2, 2), ra[2][0].reshape(2, 2)
        assert (terminals[:, 0] == terminals[:, 1]).all()
        assert (rewards[terminals[:, 0]].sum(1) <= 1e-6).all()  # zero-sum at the end (minus penalties)
        ends += int(terminals[:, 0].sum())
    assert ends > 0


@pytest.mark.parametrize('name', ['go', 'tripletriad'])
def test_one_row_is_always_live(name):
    env = make(name, num_envs=3, seed=1)
    pool = tools.random_actions(env.single_action_space, env.num_agents, 16)
    for t in range(100):
        env.step(pool[t % 16])
        assert env.masks.all()


def test_tripletriad_forced_last_placement_is_live_even_when_it_is_action_0():
    """Player 0's fifth card may be slot 0 on cell 0: its one legal action is 0, the same action mask
    a waiting row has, so the turn comes from the observation and not from the action masks."""
    env = make('tripletriad', num_envs=1, seed=0, two_player=True)
    # Player 0 plays slots 1-4 on cells 1-4 first, so slot 0 and cell 0 are what is left for ply 8.
    p0 = [1 * 9 + 8, 2 * 9 + 7, 3 * 9 + 6, 4 * 9 + 5]
    for ply in range(8):
        player = ply % 2
        if player == 0:
            action = p0[ply // 2]
        else:
            legal = np.flatnonzero(env.action_masks[1])
            action = int(legal[legal % 9 != 0][0])
        actions = np.zeros(2, dtype=np.int32)
        actions[player] = action
        _, rewards, terminals, _, _ = env.step(actions)
        assert not terminals.any()
    assert np.flatnonzero(env.action_masks[0]).tolist() == [0]
    assert env.masks.tolist() == [True, False]
    _, rewards, terminals, _, _ = env.step(np.zeros(2, dtype=np.int32))
    assert terminals.all() and rewards.sum() == 0


# ---------------------------------------------------------------------------------------------
# Trash pickup
# ---------------------------------------------------------------------------------------------

def trash_state(env):
    """Counts from the text view: trash on the grid, agents carrying, deposited so far."""
    text = env.render_text()
    header, grid = text.split('\n', 1)
    deposited = int(header.split('deposited ')[1].split('/')[0])
    return grid.count('t'), grid.count('A'), deposited


def test_trash_pickup_conserves_trash_and_pays_each_move():
    trash = 12
    env = make('trash_pickup', num_envs=1, size=8, agents=4, trash=trash, bins=2, max_steps=400,
               pickup_reward=1.0, deposit_reward=2.0, step_reward=-0.25)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    pickups = deposits = 0
    for _ in range(3000):
        on_grid, carried, deposited = trash_state(env)
        before = obs[:, -1].copy()
        obs, rewards, terminals, truncations, _ = env.step(trash_policy(env, obs, rng))
        if terminals.any() or truncations.any():  # the observation already shows the next episode
            assert terminals.all() or truncations.all()
            continue
        assert on_grid + carried + deposited == trash
        now = obs[:, -1]
        picked = (now == 1) & (before == 0)
        dropped = (now == 0) & (before == 1)
        np.testing.assert_allclose(rewards, -0.25 + 1.0 * picked + 2.0 * dropped)
        pickups += int(picked.sum())
        deposits += int(dropped.sum())
    assert pickups > 50 and deposits > 50


def test_trash_pickup_window_is_centred_on_the_agent():
    env = make('trash_pickup', num_envs=2, sight=3)
    view = 7
    for _ in range(50):
        obs = env.step(tools.random_actions(env.single_action_space, env.num_agents, 1)[0])[0]
        planes = obs[:, :4 * view * view].reshape(-1, 4, view, view)
        assert (planes[:, 3, 3, 3] == 1).all() and (planes[:, 0, 3, 3] == 0).all()


def test_trash_pickup_scripted_collector_clears_the_grid():
    scripted = play(make('trash_pickup', num_envs=8), trash_policy, 1500)['perf']
    random = play(make('trash_pickup', num_envs=8), None, 1500)['perf']
    assert scripted >= 0.9 and random < 0.6


# ---------------------------------------------------------------------------------------------
# Action masks
# ---------------------------------------------------------------------------------------------

def masked_random(env, rng):
    """A uniformly random action among those the mask allows, per row."""
    scores = rng.random(env.action_masks.shape) * env.action_masks
    return scores.argmax(1).astype(np.int32)


@pytest.mark.parametrize('name, options', [('go', {}), ('go', {'size': 9, 'two_player': True}),
                                           ('tripletriad', {}), ('tripletriad', {'two_player': True})])
def test_masked_actions_are_never_penalised(name, options):
    """Every action the mask allows is legal: illegal_reward (-1 here) never shows up."""
    if name == 'go':
        options = {**options, 'margin_reward': 0.0}
    env = make(name, num_envs=8, seed=3, illegal_reward=-1.0, **options)
    rng = np.random.default_rng(3)
    ends = 0
    for _ in range(1500):
        _, rewards, terminals, _, _ = env.step(masked_random(env, rng))
        assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
        assert (rewards[~terminals] == 0).all(), 'a masked action was penalised as illegal'
        ends += int(terminals.sum())
    assert ends > 0


@pytest.mark.parametrize('options', [{'two_player': True}, {}], ids=['two_player', 'one_row'])
def test_tripletriad_mask_is_held_cards_times_empty_cells(options):
    env = make('tripletriad', num_envs=4, seed=1, **options)
    rng = np.random.default_rng(1)
    for _ in range(200):
        for row in range(env.num_agents):
            owner, _, mine, _ = tt_decode(env.observations[row])
            if env.observations[row, TT_TO_MOVE] > 0.5:
                expected = np.outer(mine[:, 0] > 0.5, owner == 0).reshape(45)
            else:
                expected = np.eye(45, dtype=bool)[0]
            np.testing.assert_array_equal(env.action_masks[row], expected)
        env.step(masked_random(env, rng))


@pytest.mark.skipif(SANITIZED, reason='torch is not part of the C checks the sanitized run makes')
def test_tripletriad_policy_reads_legality_and_hints_from_the_observation():
    """The per-env policy (pufferlib/config/puffer_tripletriad.toml): its illegal logits are exactly the
    env's action masks' False entries, in one-row and two-seat mode, and the hints move the logits."""
    torch = pytest.importorskip('torch')
    from pufferlib import config as configuration
    from pufferlib.ocean.tripletriad.policy import ILLEGAL, Policy
    assert configuration.load('puffer_tripletriad', [])['policy']['class'].endswith('tripletriad.policy:Policy')
    for options in ({}, {'two_player': True}):
        env = make('tripletriad', num_envs=8, seed=2, **options)
        torch.manual_seed(0)
        policy = Policy(env)
        obs, _ = env.reset(seed=2)
        generator = torch.Generator().manual_seed(0)
        for _ in range(40):
            with torch.no_grad():
                logits, value = policy(torch.from_numpy(obs))
            assert logits.shape == (env.num_agents, 45) and value.shape == (env.num_agents,)
            live = env.masks
            np.testing.assert_array_equal((logits > ILLEGAL / 2).numpy()[live], env.action_masks[live])
            actions = torch.multinomial(torch.softmax(logits, 1), 1, generator=generator)[:, 0]
            obs, *_ = env.step(actions.numpy().astype(np.int32))
    hinted = torch.from_numpy(obs[:1]).repeat(2, 1)
    hinted[1, TT_TO_MOVE + 4:] += 0.25  # every hint changes
    with torch.no_grad():
        logits, _ = policy(hinted)
    assert not torch.equal(logits[0], logits[1])


# ---- puffer_keyrooms ------------------------------------------------------------------------------

def test_keyrooms_shortest_path_solves_in_the_searched_optimum_and_random_does_not():
    """The scripted solver walks the breadth-first optimum from the start: it ends the episode at the
    goal in exactly solve()'s steps, having taken every key; a random walk of a whole episode does not."""
    env = make('keyrooms', num_envs=1)
    obs, _ = env.reset(seed=0)
    optimum = keyrooms.solve(env, 0)
    assert 0 < optimum < env.config['max_steps']
    for step in range(1, optimum + 1):
        obs, rewards, terminals, truncations, _ = env.step(keyrooms.shortest_path(env, obs))
        assert bool(terminals[0]) == (step == optimum) and not truncations[0]
    log = env.log()
    assert log['perf'] == 1 and log['keys'] == env.config['num_keys'] and log['episode_length'] == optimum
    assert log['score'] >= 2 + env.config['num_keys']  # rooms: the start's, each door's far side, the keys'
    random = play(make('keyrooms', num_envs=4), None, 4 * env.config['max_steps'])
    assert random['perf'] == 0 and random['score'] < log['score']


def test_keyrooms_layout_comes_from_layout_seed_and_keys_sit_behind_nothing_they_open():
    """Every env of a run shares the layout of layout_seed; another seed draws another. Each key is
    reachable with the keys before it (the solver from the start needs them in order)."""
    text = lambda env, i=0: env.render_text(i).split('keys')[0]  # noqa: E731
    env = make('keyrooms', num_envs=3, seed=5)
    assert text(env, 0) == text(env, 2) == text(make('keyrooms', num_envs=1, seed=9))
    assert text(make('keyrooms', num_envs=1, layout_seed=1)) != text(env)
    for seed in range(5):
        layout = text(make('keyrooms', num_envs=1, layout_seed=seed, num_keys=3))
        assert sorted(c for c in layout if c.isalpha() and c != 'G') == ['A', 'B', 'C', 'a', 'b', 'c']
    plain = make('keyrooms', num_envs=1, num_keys=0)
    assert not any(c.isalpha() and c != 'G' for c in text(plain)) and keyrooms.solve(plain) > 0


def test_keyrooms_progress_and_cells_follow_the_game():
    """game_progress is (rooms entered this episode, keys held), game_cells the room and keys, the same
    through an env and every vector backend; a saved state carries them to the game it is loaded into."""
    env = make('keyrooms', num_envs=2)
    obs, _ = env.reset(seed=0)
    assert env.progress_names == ('rooms', 'keys') and env.has_cells
    np.testing.assert_array_equal(env.game_progress(), [[1, 0], [1, 0]])
    np.testing.assert_array_equal(env.game_cells(), [0, 0])
    actions = np.zeros(2, dtype=np.int32)
    for _ in range(keyrooms.solve(env, 0) - 1):  # game 0 walks to the step before the goal, game 1 bumps
        actions[0] = keyrooms.shortest_path(env, obs)[0]
        obs, *_ = env.step(actions)
    rooms, keys = env.game_progress()[0]
    assert rooms == int(env.render_text(0).split('rooms ')[1].split()[0]) > 2 and keys == env.config['num_keys']
    assert env.game_cells()[0] == 64 * keyrooms.room_of(env, 0) + 2 ** env.config['num_keys'] - 1
    env.set_state(1, env.get_state(0))
    np.testing.assert_array_equal(env.game_progress()[1], env.game_progress()[0])
    assert env.game_cells()[1] == env.game_cells()[0]
    for backend in ('Serial', 'Multiprocessing'):
        vecenv = pufferlib.vector.make('puffer_keyrooms', backend=backend, num_envs=4, num_workers=2)
        try:
            vecenv.reset(seed=0)
            vecenv.set_states([3], [env.get_state(0)])
            assert vecenv.progress_names == ('rooms', 'keys') and vecenv.has_cells
            np.testing.assert_array_equal(vecenv.game_progress(), [[1, 0], [1, 0], [1, 0], [rooms, keys]])
            np.testing.assert_array_equal(vecenv.game_cells(), [0, 0, 0, env.game_cells()[0]])
        finally:
            vecenv.close()


def test_progress_and_cells_of_an_env_without_them_are_one_state_error():
    env = make('squared', num_envs=1)
    assert env.progress_names == () and not env.has_cells
    with pytest.raises(StateError, match='puffer_squared reports no per-game progress counters'):
        env.game_progress()
    with pytest.raises(StateError, match='puffer_squared has no Go-Explore cell function'):
        env.game_cells()
    vecenv = pufferlib.vector.make('puffer_squared', backend='Serial', num_envs=2)
    with pytest.raises(StateError, match='game_cells: puffer_squared has no Go-Explore cell'):
        vecenv.game_cells()
    vecenv.close()
