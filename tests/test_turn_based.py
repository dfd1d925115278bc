"""Turn-based PettingZoo games (AEC) and action masks: emulation, vector backends, trainer, eval, arena.

Real PettingZoo classic games throughout (connect_four_v3, tictactoe_v3; the RLCard poker games when
rlcard is installed). Their own wrappers end a game on an illegal move (TerminateIllegalWrapper sets
every seat's truncation flag), and ours refuses one before PettingZoo sees it, so a run that finishes
with no truncation never played an illegal move.
"""
import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferlib
import pufferlib.vector
from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.emulation import PettingZooPufferEnv
from pufferlib.models import Default, make_policy
from pufferlib.distributions import sample_logits
from pufferlib.pufferenv import ActionMaskError, IllegalActionError, PufferEnv, idle_action_mask
from pufferlib.trainer import Trainer

from envs import MaskedParallelEnv

pytest.importorskip('pygame', reason='the classic games need pygame: pip install "pufferlib[pettingzoo]"')

@pytest.fixture(autouse=True)
def one_torch_thread():
    """Batches of a few rows: on a loaded box two torch threads made a 2-row forward pass 40x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


BOARDS = {'pettingzoo_tictactoe': 9, 'pettingzoo_connect_four': 42}  # moves that fill the board


def poker_or_skip(name):
    if 'holdem' in name:
        pytest.importorskip('rlcard', reason='the poker games need rlcard: pip install "pufferlib[pettingzoo]"')
    return name


GAMES = ['pettingzoo_tictactoe', 'pettingzoo_connect_four', 'pettingzoo_leduc_holdem', 'pettingzoo_texas_holdem']


def legal_random(rng, legal):
    """A uniformly random legal action per row (the argmax of noise over the legal entries)."""
    return np.where(legal, rng.random(legal.shape), -1.0).argmax(1).astype(np.int32)


# --- emulation: turns, masks, rewards -----------------------------------------------------------

@pytest.mark.parametrize('name', GAMES)
def test_rows_are_live_only_on_their_turn_and_masks_are_the_games_own(name):
    env = pufferlib.make(poker_or_skip(name))
    assert env.turn_based and env.num_agents == 2
    assert env.action_masks.shape == (2, env.single_action_space.n) and env.action_masks.dtype == np.bool_
    idle = idle_action_mask(env.single_action_space)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    games = 0
    for _ in range(300):
        game = env.env
        mover = env.agent_index[game.agent_selection]
        assert env.masks.tolist() == [row == mover for row in range(2)]  # one live row: the seat to move
        own = np.asarray(game.observe(game.agent_selection)['action_mask']).astype(bool)
        np.testing.assert_array_equal(env.action_masks[mover], own)
        np.testing.assert_array_equal(env.action_masks[1 - mover], idle)
        actions = legal_random(rng, env.action_masks)
        actions[1 - mover] = rng.integers(env.single_action_space.n)  # a waiting seat's action is ignored
        _, _, terminals, truncations, infos = env.step(actions)
        assert not truncations.any(), 'PettingZoo ended a game on an illegal move'
        games += len(infos)
        if infos:
            assert terminals.all()  # the ending step closes every seat
    assert games >= 3


def play_recorded_games(env, rng, count):
    """Random legal games through our wrapper: [(moves, per-seat reward sums, last mover row)]."""
    env.reset(seed=0)
    games, moves, totals = [], [], np.zeros(env.num_agents)
    while len(games) < count:
        mover = int(np.flatnonzero(env.masks)[0])
        actions = legal_random(rng, env.action_masks)
        moves.append(int(actions[mover]))
        _, rewards, terminals, _, infos = env.step(actions)
        totals += rewards
        if infos:
            assert terminals.all()
            games.append((moves, totals.copy(), mover))
            moves, totals = [], np.zeros(env.num_agents)
        else:
            assert not terminals.any()
    return games


@pytest.mark.parametrize('name, module', [
    ('pettingzoo_tictactoe', 'pettingzoo.classic.tictactoe.tictactoe'),
    ('pettingzoo_connect_four', 'pettingzoo.classic.connect_four.connect_four'),
])
def test_a_finished_game_pays_each_seat_what_pettingzoo_pays_it(name, module):
    import importlib
    env = pufferlib.make(name)
    for moves, ours, last_mover in play_recorded_games(env, np.random.default_rng(1), 12):
        # The reference: the same moves in a fresh game, summed the way PettingZoo's docs loop does.
        reference = importlib.import_module(module).env()
        reference.reset(seed=0)
        totals, queue = dict.fromkeys(reference.possible_agents, 0.0), list(moves)
        for agent in reference.agent_iter():
            _, reward, terminated, truncated, _ = reference.last()
            totals[agent] += reward
            reference.step(None if terminated or truncated else queue.pop(0))
        assert not queue
        np.testing.assert_array_equal(ours, [totals[a] for a in env.possible_agents])
        # And from the rules: zero-sum; a game that ends before the board is full is the last mover's win.
        assert ours.sum() == 0 and ours[last_mover] >= 0
        if len(moves) < BOARDS[name]:
            assert ours[last_mover] == 1


@pytest.mark.parametrize('name', ['pettingzoo_leduc_holdem', 'pettingzoo_texas_holdem'])
def test_a_finished_poker_hand_is_zero_sum_and_reported_per_seat(name):
    env = pufferlib.make(poker_or_skip(name))
    env.reset(seed=3)
    rng, hands, decided = np.random.default_rng(3), 0, 0
    returns = np.zeros(2)
    while hands < 20:
        _, rewards, terminals, _, infos = env.step(legal_random(rng, env.action_masks))
        returns += rewards
        if infos:
            hands += 1
            assert terminals.all() and returns.sum() == pytest.approx(0)
            assert infos[0]['player_0_return'] == pytest.approx(returns[0])
            decided += returns[0] != 0
            returns[:] = 0
    assert decided > 0


# --- masked sampling --------------------------------------------------------------------------

def test_illegal_actions_are_never_sampled_even_when_the_logits_prefer_them():
    env = pufferlib.make('pettingzoo_connect_four')
    env.reset(seed=0)
    policy = Default(env, hidden_size=32)
    torch.manual_seed(0)
    forbidden_seen = 0
    for step in range(400):
        legal = torch.from_numpy(env.action_masks.copy())
        if step % 2:  # adversarial logits: every illegal action 50 nats above the legal ones
            logits = torch.where(legal, torch.zeros(legal.shape), torch.full(legal.shape, 50.0))
        else:  # an untrained network
            with torch.no_grad():
                logits, _ = policy(torch.from_numpy(env.observations.copy()))
        action, logprob, _ = sample_logits(logits, mask=legal)
        assert legal.gather(1, action.unsqueeze(1)).all()
        assert torch.isfinite(logprob).all()
        forbidden_seen += int((~legal).sum())
        _, _, _, truncations, _ = env.step(action.numpy().astype(np.int32))  # raises on an illegal move
        assert not truncations.any()
    assert forbidden_seen > 6 * 400  # the waiting rows alone forbid 6 actions a step; full columns add more


def test_logprob_and_entropy_are_those_of_the_renormalised_masked_distribution():
    env = pufferlib.make('pettingzoo_tictactoe')
    env.reset(seed=0)
    rng = np.random.default_rng(2)
    masks = []
    for _ in range(40):  # masks from real positions: occupied cells, waiting seats
        masks.append(env.action_masks.copy())
        env.step(legal_random(rng, env.action_masks))
    mask = torch.from_numpy(np.concatenate(masks))
    assert (mask.sum(1) == 1).any() and ((mask.sum(1) > 1) & (~mask).any(1)).any()  # waiting, and part-full boards
    logits = torch.randn(mask.shape, generator=torch.Generator().manual_seed(0)) * 3
    probs = torch.where(mask, logits.softmax(-1), torch.zeros(()))
    reference = torch.distributions.Categorical(probs=probs / probs.sum(-1, keepdim=True))
    for _ in range(5):
        action = reference.sample()
        _, logprob, entropy = sample_logits(logits, action, mask=mask)
        torch.testing.assert_close(logprob, reference.log_prob(action))
        torch.testing.assert_close(entropy, reference.entropy())
    sampled, _, _ = sample_logits(logits, mask=mask)
    assert mask.gather(1, sampled.unsqueeze(1)).all()


# --- vector backends --------------------------------------------------------------------------

def rollout(vecenv, steps, seed):
    rng = np.random.default_rng(seed)
    obs, _ = vecenv.reset(seed=seed)
    seen = [(obs.copy(), vecenv.action_masks.copy(), vecenv.buffers.masks.copy())]
    for _ in range(steps):
        obs, rewards, terminals, _, _ = vecenv.step(legal_random(rng, vecenv.action_masks))
        seen.append((obs.copy(), vecenv.action_masks.copy(), vecenv.buffers.masks.copy(), rewards.copy(),
                     terminals.copy()))
    return seen


@pytest.mark.parametrize('name', ['pettingzoo_tictactoe', 'pettingzoo_leduc_holdem'])
def test_serial_and_multiprocessing_give_identical_masks_and_observations(name):
    runs = []
    for backend in ('Serial', 'Multiprocessing'):
        with pufferlib.vector.make(poker_or_skip(name), backend=backend, num_envs=4, num_workers=2, seed=5) as vecenv:
            assert vecenv.action_masks.shape == (8, vecenv.single_action_space.n)
            runs.append(rollout(vecenv, 60, seed=5))
    for serial, multi in zip(*runs):
        for a, b in zip(serial, multi):
            np.testing.assert_array_equal(a, b)
    legal = np.stack([step[1] for step in runs[0]])
    assert not legal.all() and (legal.sum(2) >= 1).all()


@pytest.mark.parametrize('backend', ['Serial', 'Multiprocessing'])
def test_ocean_masks_reach_the_vector_and_the_trainer(backend):
    """The bug this fixes: under a vector backend the trainer never saw an Ocean env's masks."""
    config = configuration.load('puffer_connect4', [
        '--env.num-envs', '8', '--env.two-player', 'true', '--vec.backend', backend, '--vec.num-envs', '2',
        '--vec.num-workers', '2', '--vec.batch-size', '2', '--train.bptt-horizon', '8',
        '--train.minibatch-size', '64', '--train.total-timesteps', '512'])
    vecenv = training.make_vecenv('puffer_connect4', config)
    try:
        assert vecenv.action_masks is not None and vecenv.action_masks.shape == (32, 7)
        trainer = Trainer(config, vecenv, Default(vecenv, hidden_size=16))
        assert trainer.action_masks is not None
        trainer.rollout()
        # Waiting rows (masks False) allow action 0 alone and so played it; live rows played legal moves.
        taken = trainer.action_masks.gather(2, trainer.actions.unsqueeze(2)).squeeze(2)
        assert taken.all()
        waiting = trainer.masks == 0
        assert waiting.any() and (trainer.actions[waiting] == 0).all()
        assert not trainer.action_masks.all()
    finally:
        vecenv.close()


def test_the_trainer_samples_and_scores_under_the_masks_of_an_aec_game():
    config = configuration.load('pettingzoo_tictactoe', [
        '--vec.backend', 'Serial', '--vec.num-envs', '4', '--train.bptt-horizon', '16',
        '--train.minibatch-size', '128', '--train.total-timesteps', '1024', '--policy.hidden-size', '16'])
    vecenv = training.make_vecenv('pettingzoo_tictactoe', config)
    try:
        trainer = Trainer(config, vecenv, make_policy(vecenv, config))
        trainer.rollout()
        legal = trainer.action_masks
        taken = legal.gather(2, trainer.actions.unsqueeze(2)).squeeze(2)
        assert taken.all() and not legal.all()
        # The rollout's log-probabilities are those of the masked, renormalised distribution.
        with torch.no_grad():
            logits, _ = trainer.policy(trainer.obs.flatten(0, 1))
        probs = torch.where(legal.flatten(0, 1), logits.softmax(-1), torch.zeros(()))
        reference = torch.distributions.Categorical(probs=probs / probs.sum(-1, keepdim=True))
        torch.testing.assert_close(trainer.logprobs.flatten(), reference.log_prob(trainer.actions.flatten()),
                                   rtol=1e-4, atol=1e-5)
        live = trainer.masks.bool()
        assert live.any() and (~live).any()  # waiting seats stay out of the loss
        trainer.update()
        assert np.isfinite(list(trainer.losses.values())).all()
    finally:
        vecenv.close()


# --- the arena ------------------------------------------------------------------------------

def test_the_league_arena_plays_a_pettingzoo_game_under_its_masks():
    from pufferlib.arena import NetworkPlayer, RandomPlayer, play_games
    from pufferlib.league import League
    config = configuration.load('pettingzoo_tictactoe')
    arena = League.open_env('pettingzoo_tictactoe', config, games=8)
    try:
        assert arena.seats == 2 and arena.action_masks.shape == (8, 9)
        arena.set_opponents([RandomPlayer(9), NetworkPlayer(Default(arena, hidden_size=16), name='net')])
        results = play_games(arena, NetworkPlayer(Default(arena, hidden_size=16)), games=30, seed=0)
        assert results['games'].sum() >= 30  # an illegal move would have raised IllegalActionError
    finally:
        arena.close()


# --- errors ---------------------------------------------------------------------------------

def test_an_illegal_action_is_refused_before_the_game_sees_it():
    env = pufferlib.make('pettingzoo_tictactoe')
    env.reset(seed=0)
    env.step(np.array([4, 0], np.int32))  # seat 0 takes the centre
    with pytest.raises(IllegalActionError, match=r"'player_2' \(row 1\) was given action \[?4\]?.*forbids"):
        env.step(np.array([0, 4], np.int32))  # seat 1 plays the taken centre
    assert isinstance(IllegalActionError('x'), pufferlib.PufferError)
    _, _, _, truncations, _ = env.step(np.array([0, 0], np.int32))  # the game goes on
    assert not truncations.any() and env.masks.tolist() == [True, False]


def test_an_illegal_action_through_a_vector_worker_names_the_agent():
    with pufferlib.vector.make('pettingzoo_tictactoe', backend='Multiprocessing', num_envs=2, num_workers=2,
                               seed=0) as vecenv:
        vecenv.reset(seed=0)
        vecenv.step(np.array([4, 0, 4, 0], np.int32))
        with pytest.raises(pufferlib.EnvError, match='IllegalActionError'):
            vecenv.step(np.array([0, 4, 0, 4], np.int32))


class VanishingMask:
    """tictactoe whose observations lose their action_mask after three moves."""

    def __new__(cls):
        from pettingzoo.classic.tictactoe import tictactoe

        class Game(tictactoe.raw_env):
            def observe(self, agent):
                ob = super().observe(agent)
                if sum(1 for s in self.board.squares if s) >= 3:
                    del ob['action_mask']
                return ob
        return Game()


def test_a_mask_that_disappears_mid_episode_is_an_error():
    env = PettingZooPufferEnv(env=VanishingMask())
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    env.step(legal_random(rng, env.action_masks))
    env.step(legal_random(rng, env.action_masks))
    with pytest.raises(ActionMaskError, match="observed no 'action_mask' any more"):
        env.step(legal_random(rng, env.action_masks))


@pytest.mark.parametrize('where', ['obs', 'info'])
def test_parallel_envs_publish_masks_from_observations_or_infos(where):
    game = MaskedParallelEnv(where=where)
    env = PettingZooPufferEnv(env=game, action_mask=where if where == 'info' else 'auto', seed=1)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(40):
        expected = np.array([game.legal[a] for a in game.possible_agents], dtype=bool)
        np.testing.assert_array_equal(env.action_masks, expected)
        env.step(legal_random(rng, env.action_masks))  # the env raises on an illegal action
    assert len(game.taken) == 80
    illegal = (~env.action_masks).argmax(1).astype(np.int32)
    if (~env.action_masks).any(1).all():
        with pytest.raises(IllegalActionError):
            env.step(illegal)


def test_an_info_mask_that_disappears_is_an_error():
    env = PettingZooPufferEnv(env=MaskedParallelEnv(where='info', vanish_at=2), action_mask='info')
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    env.step(legal_random(rng, env.action_masks))
    with pytest.raises(ActionMaskError, match="info has no 'action_mask'"):
        env.step(legal_random(rng, env.action_masks))


@pytest.mark.parametrize('mask_space, match', [
    (spaces.Box(0, 1, (3,), np.int8), r'needs a mask of shape \(4,\)'),
    (spaces.Box(0, 1, (4,), np.float32), 'dtype float32'),
])
def test_a_declared_mask_of_the_wrong_shape_or_dtype_is_an_error(mask_space, match):
    with pytest.raises(ActionMaskError, match=match):
        PettingZooPufferEnv(env=MaskedParallelEnv(mask_space=mask_space))
    with pytest.raises(ActionMaskError, match='no .action_mask. entry'):
        PettingZooPufferEnv(env=MaskedParallelEnv(where='info'), action_mask='obs')


def test_mask_buffers_of_the_wrong_shape_or_dtype_are_errors():
    obs, act = spaces.Box(0, 1, (2,), np.float32), spaces.Discrete(3)

    class Masked(PufferEnv):
        single_observation_space, single_action_space, num_agents, action_mask_width = obs, act, 2, 3

    buf = pufferlib.make_buffers(obs, act, 2, mask_width=3)
    assert Masked(buf).action_masks is buf.action_masks
    buf.action_masks = np.ones((2, 4), dtype=bool)
    with pytest.raises(ActionMaskError, match=r'bool\[2, 3\].*got bool\[2, 4\]'):
        Masked(buf)
    buf.action_masks = np.ones((2, 3), dtype=np.uint8)
    with pytest.raises(ActionMaskError, match='got uint8'):
        Masked(buf)

    class WrongWidth(Masked):
        action_mask_width = 5
    with pytest.raises(ActionMaskError, match='needs 3 columns'):
        WrongWidth()


def test_an_env_that_replaces_its_mask_array_is_refused_by_the_vector():
    obs, act = spaces.Box(0, 1, (2,), np.float32), spaces.Discrete(3)

    class Replaces(PufferEnv):
        single_observation_space, single_action_space, num_agents = obs, act, 1

        def __init__(self, buf=None, seed=None):
            super().__init__(buf)
            self.action_masks = np.ones((1, 3), dtype=bool)  # its own array, not the vector's

        def reset(self, seed=None):
            return self.observations, []

    with pytest.raises(ActionMaskError, match='no action_mask_width'):
        pufferlib.vector.make(Replaces, backend='Serial', num_envs=2)

    class Rebinds(Replaces):
        action_mask_width = 3
    with pytest.raises(ActionMaskError, match='not the array the vector gave it'):
        pufferlib.vector.make(Rebinds, backend='Serial', num_envs=2)


# --- training end to end (slow) --------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize('name, backend', [('pettingzoo_tictactoe', 'Serial'),
                                           ('pettingzoo_connect_four', 'Multiprocessing')])
def test_puffer_train_and_eval_on_a_classic_game_never_play_an_illegal_move(name, backend, tmp_path, monkeypatch):
    from pufferlib.evaluate import evaluate
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    config = configuration.load(name, ['--vec.backend', backend, '--vec.num-envs', '4', '--vec.num-workers', '2',
                                       '--train.bptt-horizon', '16', '--train.minibatch-size', '128',
                                       '--train.total-timesteps', '4096', '--train.log-interval', '0'])
    summary = training.train(name, config=config, quiet=True)
    assert summary['global_step'] >= 4096  # an illegal move would have raised IllegalActionError
    # An untrained-ish policy without masks would soon pick an occupied cell; eval samples under them.
    result = evaluate(name, 'latest', episodes=20)
    assert result['episodes'] >= 20


@pytest.mark.slow
def test_a_league_on_a_pettingzoo_game_fills_its_directory(tmp_path):
    pytest.importorskip('scipy')
    pytest.importorskip('openskill')
    import json
    import os
    from pufferlib import league
    path = league.create('pettingzoo_tictactoe', [
        '--league.method', 'psro', '--league.iterations', '2', '--league.steps-per-iteration', '1024',
        '--league.num-envs', '16', '--league.eval-games', '16', '--train.bptt-horizon', '16',
        '--train.minibatch-size', '256', '--policy.hidden-size', '16'], root=str(tmp_path))
    assert league.League(path).run(printer=None)['iterations'] == 2
    with open(os.path.join(path, 'ledger.jsonl')) as f:
        rows = [r for r in map(json.loads, f) if r['type'] == 'iteration']
    assert rows[-1]['population'] == ['p000', 'p001'] and rows[-1]['exploitability'] is None
    assert np.isfinite(league.PayoffTable.from_dict(json.load(open(os.path.join(path, 'payoffs.json')))).matrix()).all()
