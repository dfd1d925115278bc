"""puffer_kuhn and puffer_leduc against OpenSpiel's kuhn_poker and leduc_poker, and their turn-based
convention (ocean/kuhn/kuhn.h). The Ocean contract tests of tests/test_ocean.py (determinism, spaces,
clamping, rendering, logs, the sanitizer run) cover these envs like every other Ocean env."""
import numpy as np
import pytest

import pufferlib
from pufferlib.pufferenv import APIUsageError

pyspiel = pytest.importorskip('pyspiel')

GAMES = {'kuhn': ('kuhn_poker', 3, 2), 'leduc': ('leduc_poker', 6, 3)}  # OpenSpiel name, cards, actions


def make(name, num_envs=1, seed=0, **kwargs):
    return pufferlib.make(f'puffer_{name}', num_envs=num_envs, seed=seed, **kwargs)


def private_card(row, cards):
    return int(row[2:2 + cards].argmax())


@pytest.mark.parametrize('name', list(GAMES))
def test_random_playouts_match_openspiel_state_for_state(name):
    """Deal the cards our env dealt into OpenSpiel, play the same random legal actions, and compare at
    every decision: both rows' observations with the information-state tensors, the live row and its
    action mask with OpenSpiel's current player and legal actions; at the end, both payoffs."""
    game_name, cards, n_actions = GAMES[name]
    game = pyspiel.load_game(game_name)
    env = make(name, num_envs=1, seed=3)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    hands = 1500
    for _ in range(hands):
        state = game.new_initial_state()
        state.apply_action(private_card(obs[0], cards))  # chance: player 0's card, then player 1's
        state.apply_action(private_card(obs[1], cards))
        while not state.is_terminal():
            if state.is_chance_node():  # Leduc's public card: our env revealed it in both rows
                assert obs[0, 8:14].sum() == 1 and (obs[0, 8:14] == obs[1, 8:14]).all()
                assert state.legal_actions().count(int(obs[0, 8:14].argmax())) == 1
                state.apply_action(int(obs[0, 8:14].argmax()))
                continue
            player = state.current_player()
            for row in range(2):
                np.testing.assert_array_equal(obs[row], np.array(state.information_state_tensor(row), np.float32))
            np.testing.assert_array_equal(env.masks, [player == 0, player == 1])
            np.testing.assert_array_equal(env.action_masks[player], state.legal_actions_mask(player))
            waiting = np.zeros(n_actions, dtype=bool)
            waiting[0] = True
            np.testing.assert_array_equal(env.action_masks[1 - player], waiting)
            action = int(rng.choice(state.legal_actions()))
            actions = rng.integers(0, n_actions, size=2).astype(np.int32)  # the waiting row's is ignored
            actions[player] = action
            obs, rewards, terminals, truncations, _ = env.step(actions)
            state.apply_action(action)
            assert not truncations.any()
            if state.is_terminal():
                assert terminals.all()
                np.testing.assert_array_equal(rewards, np.array(state.returns(), np.float32))
            else:
                assert not terminals.any() and not rewards.any()
    env.close()


@pytest.mark.parametrize('name', list(GAMES))
def test_deals_are_uniform_like_openspiels_chance_nodes(name):
    """OpenSpiel deals each remaining card with equal probability: so every ordered pair of private
    cards is equally likely (6 pairs in Kuhn, 30 in Leduc)."""
    _, cards, _ = GAMES[name]
    env = make(name, num_envs=4096, seed=1)
    obs, _ = env.reset(seed=1)
    counts = np.zeros((cards, cards))
    for _ in range(3):
        first = obs[0::2, 2:2 + cards].argmax(1)
        second = obs[1::2, 2:2 + cards].argmax(1)
        np.add.at(counts, (first, second), 1)
        for _ in range(12):  # play a hand to its end (calls only: at most four decisions per round)
            obs = env.step(np.ones(env.num_agents, dtype=np.int32))[0]
    assert np.diag(counts).sum() == 0
    pairs = cards * (cards - 1)
    expected = counts.sum() / pairs
    off_diagonal = counts[~np.eye(cards, dtype=bool)]
    assert np.abs(off_diagonal - expected).max() < 5 * np.sqrt(expected)  # five standard deviations


@pytest.mark.parametrize('name', list(GAMES))
def test_random_play_earns_openspiels_expected_value(name):
    """Both seats uniformly random: the mean payoff to player 0 over many hands matches OpenSpiel's exact
    expected value of that policy pair (chance, payoffs and turn order all enter)."""
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import expected_game_score
    game_name, _, n_actions = GAMES[name]
    game = pyspiel.load_game(game_name)
    uniform = policy_lib.UniformRandomPolicy(game)
    value = expected_game_score.policy_value(game.new_initial_state(), [uniform, uniform])[0]
    env = make(name, num_envs=2048, seed=5)
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    payoffs = []
    for _ in range(200):
        # the argmax of i.i.d. uniforms over the legal actions is uniform over them
        actions = (rng.random(env.action_masks.shape) * env.action_masks).argmax(1).astype(np.int32)
        assert env.action_masks[np.arange(env.num_agents), actions].all()
        _, rewards, terminals, _, _ = env.step(actions)
        payoffs.extend(rewards[0::2][terminals[0::2]])
        np.testing.assert_array_equal(rewards[0::2], -rewards[1::2])  # zero-sum, both seats paid at once
    payoffs = np.array(payoffs)
    assert len(payoffs) > 50_000
    assert abs(payoffs.mean() - value) < 5 * payoffs.std() / np.sqrt(len(payoffs))


def test_leduc_illegal_actions_play_as_call():
    """Folding when nothing is owed and a third raise are played as calls (OpenSpiel's action_mapping)."""
    a, b = make('leduc', seed=2), make('leduc', seed=2)
    a.reset(seed=2), b.reset(seed=2)
    script = [  # (action given to a, the action it amounts to, given to b)
        (0, 1), (2, 2), (2, 2), (2, 1),   # round 1: fold unowed -> call, raise, raise, third raise -> call
        (0, 1), (1, 1),                    # round 2: check (as an unowed fold), check: showdown
    ]
    for given, meant in script:
        player = int(a.masks.argmax())
        assert a.action_masks[player, given] == (given == meant)
        acts_a = np.zeros(2, np.int32)
        acts_b = np.zeros(2, np.int32)
        acts_a[player], acts_b[player] = given, meant
        for x, y in zip(a.step(acts_a)[:4], b.step(acts_b)[:4]):
            np.testing.assert_array_equal(x, y)
    assert a.terminals.all()  # the hand ended at the showdown after the second check
    assert abs(a.rewards[0]) in (0.0, 5.0)  # 1 ante + 2 + 2 raised in round 1, nothing in round 2


@pytest.mark.parametrize('name', list(GAMES))
def test_one_row_against_the_random_player(name):
    """two_player=False: one row, always live, seat alternating by hand (seat=-1) or fixed; every
    observation is an information state of OpenSpiel's game with the same legal actions."""
    from pufferlib import league
    game_name, _, n_actions = GAMES[name]
    table, infos, legal = league.information_states(pyspiel.load_game(game_name))
    legal_of = {row.tobytes(): mask for row, mask in zip(infos, legal)}
    for seat in (-1, 0, 1):
        env = make(name, num_envs=8, seed=4, two_player=False, seat=seat)
        assert env.num_agents == 8 and env.action_masks.shape == (8, n_actions)
        obs, _ = env.reset(seed=4)
        rng = np.random.default_rng(seat + 1)
        seats, hands = [], 0
        seats.append(obs[:, 1].copy())
        for _ in range(400):
            assert env.masks.all()
            for row, mask in zip(obs, env.action_masks):
                np.testing.assert_array_equal(mask, legal_of[row.tobytes()])
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks], dtype=np.int32)
            obs, rewards, terminals, _, _ = env.step(actions)
            hands += int(terminals.sum())
            if terminals.any():
                seats.append(obs[terminals, 1].copy())
        assert hands > 100
        played = np.concatenate(seats)
        if seat >= 0:
            assert (played == seat).all()
        else:
            assert 0.3 < played.mean() < 0.7
        env.close()


@pytest.mark.parametrize('name', list(GAMES))
@pytest.mark.parametrize('two_player', [True, False])
def test_masks_and_built_in_player_are_deterministic_under_a_seed(name, two_player):
    """tests/test_ocean.py checks observations and rewards of the defaults; this adds the masks and the
    one-row mode, whose random player draws from the env's seeded stream."""
    runs = []
    for _ in range(2):
        env = make(name, num_envs=3, seed=11, two_player=two_player)
        rng = np.random.default_rng(0)
        seen = []
        for _ in range(500):
            actions = (rng.random(env.action_masks.shape) * env.action_masks).argmax(1).astype(np.int32)
            obs, rewards, _, _, _ = env.step(actions)
            seen.append(np.concatenate([obs.ravel(), rewards, env.masks, env.action_masks.ravel()]))
        runs.append(np.array(seen))
    np.testing.assert_array_equal(runs[0], runs[1])
    other = make(name, num_envs=3, seed=12, two_player=two_player)
    assert not np.array_equal(other.observations, make(name, num_envs=3, seed=11, two_player=two_player).observations)


def test_kuhn_random_opponent_is_uniform():
    """The agent sits second: the random first player bets in about half of the hands."""
    env = make('kuhn', num_envs=4096, seed=0, two_player=False, seat=1)
    obs, _ = env.reset(seed=0)
    bets = obs[:, 5 + 1]  # first betting slot, 'bet' bit
    assert obs[:, 5:7].sum(1).min() == 1  # the opponent has always moved when the agent first sees the hand
    assert abs(bets.mean() - 0.5) < 0.03


def test_waiting_row_action_is_ignored():
    a, b = make('leduc', num_envs=16, seed=9), make('leduc', num_envs=16, seed=9)
    rng = np.random.default_rng(0)
    for _ in range(300):
        live = a.masks.copy()
        choice = np.array([rng.choice(np.flatnonzero(m)) for m in a.action_masks], dtype=np.int32)
        noise = rng.integers(0, 3, size=a.num_agents).astype(np.int32)
        out_a = a.step(np.where(live, choice, noise))
        out_b = b.step(np.where(live, choice, 0))
        for x, y in zip(out_a[:4], out_b[:4]):
            np.testing.assert_array_equal(x, y)


def test_poker_render_shows_the_hand():
    env = make('leduc', seed=0)
    text = env.render_text()
    assert 'round 1' in text and '<- to act' in text and 'public ??' in text
    first = env.render()
    env.step(np.array([1, 0], np.int32))
    env.step(np.array([0, 1], np.int32))  # check, check: the public card is turned
    assert 'round 2' in env.render_text() and 'public ??' not in env.render_text()
    assert not np.array_equal(first, env.render())
    kuhn = make('kuhn', seed=0, two_player=False, seat=1)
    assert '(agent)' in kuhn.render_text() and 'betting: ' in kuhn.render_text()


def test_poker_options_are_checked():
    with pytest.raises(APIUsageError, match='seat'):
        make('kuhn', seat=2)
    with pytest.raises(APIUsageError, match='two_player'):
        make('leduc', two_player=3)
