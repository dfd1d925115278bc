"""pufferlib/arena.py: the learner's rows of a two-seat vector env, the other rows played by a pool of
frozen players, batched per policy. Real Ocean games (Kuhn, Leduc, two-player Connect4)."""
import numpy as np
import pytest
import torch

import pufferlib
from pufferlib import registry
from pufferlib.arena import (Arena, BuiltinPlayer, LeagueError, NetworkPlayer, Player, RandomPlayer, StackedNetworks,
                             play_games)
from pufferlib.models import Default
from pufferlib.pufferenv import APIUsageError


class Counting(Player):
    """A real player (uniform legal play) that counts its batched calls and the rows it was given."""

    def __init__(self, num_actions, name):
        self.inner, self.name = RandomPlayer(num_actions, seed=len(name)), name
        self.calls, self.rows = 0, 0

    def act(self, obs, action_masks):
        self.calls += 1
        self.rows += len(obs)
        return self.inner.act(obs, action_masks)


def preferring(arena, action, hidden=16):
    """A network that plays `action` whenever it is legal (a huge bias on that logit)."""
    net = Default(arena, hidden_size=hidden)
    with torch.no_grad():
        head = net.actor
        head.weight.zero_()
        head.bias.fill_(0.0)
        head.bias[action] = 50.0
    return net


def test_the_trainer_sees_only_learner_rows_and_the_learner_plays_both_seats():
    env = registry.make('puffer_kuhn', num_envs=64)
    arena = Arena(env, seed=0)
    assert (arena.seats, arena.games, arena.num_agents) == (2, 64, 64)
    arena.set_opponents([RandomPlayer(2)])
    obs, _ = arena.reset(seed=1)
    assert obs.shape == (64, *env.single_observation_space.shape)
    np.testing.assert_array_equal(obs, env.observations[arena.learner_rows])
    assert set(arena.seat.tolist()) == {0, 1}  # drawn per game: 64 fair draws give both seats
    np.testing.assert_array_equal(arena.learner_rows, np.arange(64) * 2 + arena.seat)
    np.testing.assert_array_equal(arena.action_masks, env.action_masks[arena.learner_rows])
    _, _, _, _, _, _, live = arena.recv()
    np.testing.assert_array_equal(live, env.masks[arena.learner_rows])  # live only on its own turn
    assert live.any() and not live.all()

    fixed = Arena(registry.make('puffer_kuhn', num_envs=32), learner_seat=1, seed=0)
    fixed.set_opponents([RandomPlayer(2)])
    fixed.reset(seed=0)
    play_games(fixed, RandomPlayer(2, seed=3), 200)
    assert (fixed.seat == 1).all()


def test_one_batched_call_per_distinct_policy_per_step():
    env = registry.make('puffer_leduc', num_envs=256)
    arena = Arena(env, seed=0)
    pool = [Counting(3, f'p{i}') for i in range(8)]
    arena.set_opponents(pool, weights=[1, 1, 1, 1, 2, 2, 2, 0])
    results = play_games(arena, RandomPlayer(3, seed=1), 1000)
    steps = arena._steps
    for p in pool[:7]:
        assert 0 < p.calls <= steps  # never more than one call a step, whatever the row count
    assert pool[7].calls == 0 and results['games'][7] == 0  # weight 0: never drawn
    assert pool[4].rows > pool[0].rows  # twice the weight, about twice the rows
    assert results['games'].sum() >= 1000


def test_a_stacked_pool_acts_like_each_network_and_never_plays_an_illegal_action():
    """Eight same-shape networks run as one vmapped pass; each row gets its own owner's action."""
    env = registry.make('puffer_leduc', num_envs=512)
    arena = Arena(env, seed=0)
    # Leduc: fold (0) is illegal when nothing is owed, raise (2) after two raises: the preferred
    # action must then give way to a legal one.
    nets = [preferring(arena, i % 3) for i in range(8)]
    arena.set_opponents([NetworkPlayer(n, name=f'n{i}') for i, n in enumerate(nets)])
    assert arena._stacked is not None
    arena.reset(seed=0)
    checked = 0
    for _ in range(30):
        arena._opponents_act()
        opp = np.ones((arena.games, 2), dtype=bool)
        opp[arena._ids, arena.seat] = False
        rows = arena._rows[opp]
        owner = arena.opponent
        live = env.masks[rows]
        acted = arena._actions[rows]
        legal = env.action_masks[rows, acted]
        assert legal[live].all()
        preferred = (owner % 3)[live]
        allowed = env.action_masks[rows[live], preferred]
        np.testing.assert_array_equal(acted[live][allowed], preferred[allowed])
        checked += int(allowed.sum())
        arena.step(RandomPlayer(3, seed=2).act(arena._obs, arena.action_masks))
    assert checked > 1000


def test_stacking_needs_one_architecture():
    env = registry.make('puffer_kuhn', num_envs=8)
    arena = Arena(env)
    assert StackedNetworks.stackable([Default(arena, hidden_size=8), Default(arena, hidden_size=8)])
    assert not StackedNetworks.stackable([Default(arena, hidden_size=8), Default(arena, hidden_size=16)])
    arena.set_opponents([NetworkPlayer(Default(arena, hidden_size=8)), NetworkPlayer(Default(arena, hidden_size=16))])
    assert arena._stacked is None
    results = play_games(arena, RandomPlayer(2), 100)  # one pass per network instead
    assert results['games'].sum() >= 100


def test_a_policy_that_always_bets_beats_random_kuhn_play():
    """Results are the learner's: betting every hand wins chips from a uniformly random opponent."""
    env = registry.make('puffer_kuhn', num_envs=128)
    arena = Arena(env, seed=0)
    arena.set_opponents([RandomPlayer(2, seed=5)])

    class Bets(Player):
        def act(self, obs, action_masks):
            return np.where(action_masks[:, 1], 1, 0)
    results = play_games(arena, Bets(), 4000)
    assert results['score'][0] / results['games'][0] > 0.2


@pytest.mark.parametrize('stack', [True, False])
def test_the_builtin_player_takes_its_share_of_the_games_and_plays_the_scripted_moves(stack):
    """A BuiltinPlayer in the pool gets its weight's share of the learner's games, and in them the env's C
    script moves (win, else block, else random): uniform play wins ~half its games against uniform play
    and few against the script, as in one-row mode. Network players beside it still run stacked."""
    arena = Arena(registry.make('puffer_connect4', num_envs=256, two_player=True), seed=0)
    assert arena.supports_builtin
    torch.manual_seed(0)
    networks = [NetworkPlayer(Default(arena, hidden_size=8), name=f'n{k}') for k in range(2)]
    arena.set_opponents([networks[0], BuiltinPlayer(), networks[1]], weights=[0.3, 0.4, 0.3], stack=stack)
    assert (arena._stacked is not None) == stack
    results = play_games(arena, RandomPlayer(7, seed=1), 6000, seed=3)
    games = results['games']
    np.testing.assert_allclose(games / games.sum(), [0.3, 0.4, 0.3], atol=0.025)
    wins = results['wins'] / games
    # untrained networks play about uniformly; against the script uniform play won 1-3% (docs/league.md)
    assert 0.35 < wins[0] < 0.65 and 0.35 < wins[2] < 0.65 and wins[1] < 0.1


def test_play_games_counts_the_same_number_of_games_from_every_game_slot():
    """play_games counts each slot's first games only: counting the first games to end anywhere would
    over-count the fast ones (connect4 games last 7 to 42 moves). 64 slots asked for 64 games give one
    game per slot, 130 games three per slot; training afterwards counts every game again."""
    arena = Arena(registry.make('puffer_connect4', num_envs=64, two_player=True), seed=0)
    arena.set_opponents([RandomPlayer(7, seed=2)])
    results = play_games(arena, RandomPlayer(7, seed=1), 64, seed=0)
    assert results['games'].sum() == 64
    assert (arena._slot_games >= 1).all()  # every slot finished its game, however long
    results = play_games(arena, RandomPlayer(7, seed=1), 130, seed=0)
    assert results['games'].sum() == 3 * 64
    assert (arena._slot_games >= 3).all()
    assert arena._quota is None
    before, player = arena.results['games'].sum(), RandomPlayer(7, seed=4)
    while arena.results['games'].sum() < before + 200:
        arena.step(player.act(arena._obs, arena.action_masks))
    assert arena.results['games'].sum() >= before + 200  # no quota: every ended game counts


def test_bad_input_gives_one_clear_error():
    with pytest.raises(LeagueError, match='two or more'):
        Arena(registry.make('puffer_connect4', num_envs=4, two_player=False))
    env = registry.make('puffer_kuhn', num_envs=4)
    with pytest.raises(APIUsageError, match='learner_seat'):
        Arena(env, learner_seat=2)
    arena = Arena(env)
    with pytest.raises(APIUsageError, match='set_opponents first'):
        arena.reset()
    with pytest.raises(APIUsageError, match='one non-negative weight per player'):
        arena.set_opponents([RandomPlayer(2)], weights=[1, 1])
    arena.set_opponents([RandomPlayer(2)])
    arena.reset()
    with pytest.raises(APIUsageError, match='one action row per game'):
        arena.send(np.zeros(8, dtype=np.int32))
    recurrent = pufferlib.models.LSTMWrapper(arena, Default(arena, hidden_size=8), 8, 8)
    with pytest.raises(LeagueError, match='recurrent'):
        NetworkPlayer(recurrent)
    assert isinstance(LeagueError('x'), pufferlib.PufferError)
    with pytest.raises(LeagueError, match='no built-in player'):  # Kuhn's spec does not say builtin = true
        arena.set_opponents([BuiltinPlayer()])
    c4 = Arena(registry.make('puffer_connect4', num_envs=4, two_player=True))
    c4.set_opponents([BuiltinPlayer()])
    c4.reset()
    with pytest.raises(APIUsageError, match='the arena: action 7 for agent row 2 is outside'):
        c4.send(np.array([0, 0, 7, 0], dtype=np.int32))  # its actions skip the env's own check


def test_the_trainer_learns_from_learner_rows_under_their_action_masks():
    """PPO on the arena: the rollout buffer holds one row per game, actions sampled under the masks."""
    from pufferlib import config as configuration
    from pufferlib import trainer as training
    config = configuration.load('puffer_leduc', ['--train.bptt-horizon', '16', '--train.minibatch-size', '512',
                                                 '--policy.hidden-size', '32', '--train.optimizer', 'adam',
                                                 '--train.learning-rate', '0.003'])
    env = registry.make('puffer_leduc', num_envs=64)
    arena = Arena(env, seed=0)
    arena.set_opponents([RandomPlayer(3)])
    policy = Default(arena, hidden_size=32)
    trainer = training.Trainer(config, arena, policy)
    assert trainer.segments == 64 and trainer.action_masks.shape == (64, 16, 3)
    for _ in range(2):
        trainer.rollout()
        trainer.update()
    taken = trainer.action_masks.gather(2, trainer.actions.unsqueeze(2)).squeeze(2)
    assert taken.all()  # no illegal action was ever sampled
    assert not trainer.action_masks.all()  # and the masks did forbid some
    assert np.isfinite(list(trainer.losses.values())).all()
