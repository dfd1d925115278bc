"""Swarming and Go-Explore (pufferlib/explore.py, the trainer's [swarm] options) on puffer_keyrooms: games
moved onto others' states, the rollout's rows restarted, the archive's rules, its place in checkpoints and
resumes, and the errors a user can cause."""
import contextlib
import math

import numpy as np
import pytest
import torch

from pufferlib import config as configuration
from pufferlib import train as training
from pufferlib.checkpoint import load_checkpoint
from pufferlib.explore import Archive
from pufferlib.models import make_policy
from pufferlib.trainer import Trainer

from small_run import SMALL, train_small

pytestmark = pytest.mark.usefixtures('experiments')  # conftest.py: runs land in tmp_path

# 2 x 16 games, 16-step segments: one epoch is 512 agent steps.
KEYROOMS = [*SMALL, '--env.num-envs', '16', '--train.minibatch-size', '128']


@contextlib.contextmanager
def keyrooms_trainer(*flags, backend='Serial'):
    config = configuration.load('puffer_keyrooms', [*KEYROOMS, '--vec.backend', backend,
                                                    '--train.total-timesteps', '4096', *flags])
    vecenv = training.make_vecenv('puffer_keyrooms', config)
    try:
        yield Trainer(config, vecenv, make_policy(vecenv, config), env_name='puffer_keyrooms')
    finally:
        vecenv.close()


def rollout_without_moving(trainer):
    """One rollout with the explorer held back, so a test can call it at a known moment."""
    trainer.explorer.next_step = math.inf
    trainer.rollout()
    trainer.explorer.next_step = 0


LSTM = ('--rnn.class', 'pufferlib.models:LSTMWrapper', '--policy.hidden-size', '32', '--rnn.input-size', '32',
        '--rnn.hidden-size', '32')


@pytest.mark.parametrize('backend,rnn', [('Serial', LSTM), ('Multiprocessing', ())])
def test_swarm_moves_the_lowest_games_onto_the_top_games_states(backend, rnn):
    """A move copies the states of the top games (by rooms reached) onto the lowest, where they are behind:
    a moved game's state is byte for byte a top game's, the observation the rollout holds for its row is
    that game's, and the count is what the metrics row reports."""
    with keyrooms_trainer('--swarm.mode', 'swarm', '--swarm.fraction', '0.25', '--swarm.top-fraction', '0.125',
                          *rnn, backend=backend) as trainer:
        vecenv = trainer.vecenv
        for _ in range(2):
            rollout_without_moving(trainer)
        rooms = vecenv.game_progress()[:, 0]
        before = vecenv.get_states(range(vecenv.num_games))
        assert rooms.max() > rooms.min()  # random walks spread over the rooms: some games are behind
        stats = trainer.explorer.maybe_move(trainer)
        after = vecenv.get_states(range(vecenv.num_games))
        moved = [g for g in range(vecenv.num_games) if after[g] != before[g]]
        top = set(np.argsort(-rooms, kind='stable')[:4].tolist()) | {g for g in range(32) if rooms[g] == rooms.max()}
        assert stats['moved'] == len(moved) > 0 and stats['rooms_max'] == rooms.max()
        assert len(moved) <= 8 and all(rooms[g] <= np.sort(rooms)[7] for g in moved)  # the lowest quarter
        held = {int(row): batch[i] for batch, ids, _, _ in trainer.held for i, row in enumerate(ids)}
        for g in moved:
            source = [s for s in top if after[g] == before[s]]
            assert source and rooms[source[0]] > rooms[g]
            assert torch.equal(held[g], torch.from_numpy(vecenv.buffers.observations[g]))
            assert all(float(t[g].abs().sum()) == 0 for t in trainer.state.values())  # a blank memory
        still = [g for g in range(32) if g not in moved]  # the others keep their memory
        assert all(float(t[g].abs().sum()) > 0 for t in trainer.state.values() for g in still)
        trainer.rollout()  # the moved rows act on from their new states
        trainer.update()


def test_swarm_counts_reach_the_metrics_rows():
    summary = train_small('puffer_keyrooms', '--env.num-envs', '16', '--train.minibatch-size', '128',
                          '--swarm.mode', 'swarm', '--swarm.interval', '1024', '--train.log-interval', '0',
                          steps=4096)
    row = summary['last']
    assert row['swarm/moves'] >= row['swarm/moved'] >= 0 and row['swarm/rooms_max'] >= 1
    assert 'swarm/cells' not in row


def test_archive_keeps_the_best_state_per_cell_counts_and_weights():
    archive = Archive(limit=10)
    cells, scores = np.array([5, 5, 7]), np.array([1.0, 3.0, 2.0])
    wanted = archive.wanted(cells, scores)
    assert wanted == {5: 1, 7: 2}  # one game per cell: the best
    archive.add(cells, scores, {5: b'five', 7: b'seven'})
    assert archive.cells[5].state == b'five' and archive.cells[5].score == 3 and archive.cells[5].seen == 2
    assert archive.wanted(np.array([5, 7]), np.array([3.0, 2.0])) == {}  # nothing better
    assert archive.wanted(np.array([5]), np.array([4.0])) == {5: 0}
    archive.add(np.array([5]), np.array([4.0]), {5: b'better'})
    assert archive.cells[5] == (b'better', 4.0, 3, 0) and archive.found == 2
    names, p = archive.weights()
    seen = {5: 3, 7: 1}
    expected = np.array([1 / math.sqrt(seen[c] + 1) for c in names])
    np.testing.assert_allclose(p, expected / expected.sum())  # Go-Explore's 1 / sqrt(seen + 1)
    rng = np.random.default_rng(0)
    picks = archive.choose(4000, rng)
    share_7 = picks.count(7) / len(picks)
    assert abs(share_7 - p[names.index(7)]) < 0.03
    assert archive.cells[7].chosen + archive.cells[5].chosen == 4000


def test_archive_is_bounded_and_the_most_seen_cells_leave_first():
    archive = Archive(limit=3)
    archive.add(np.array([1, 1, 1, 2, 3]), np.zeros(5), {1: b'1', 2: b'2', 3: b'3'})
    archive.add(np.array([2, 4]), np.zeros(2), {4: b'4'})  # 4 is new: the most seen old cell (1) goes
    assert sorted(archive.cells) == [2, 3, 4] and archive.found == 4
    archive.add(np.array([5, 6, 7, 8]), np.zeros(4), {5: b'5', 6: b'6', 7: b'7', 8: b'8'})
    assert len(archive) == 3 and set(archive.cells) <= {5, 6, 7, 8} and archive.found == 8
    copy = Archive(limit=3)
    copy.load_state_dict(archive.state_dict())
    assert copy.cells == archive.cells and copy.found == archive.found


def test_go_explore_archives_cells_restarts_games_and_resumes_with_the_same_archive(tmp_path):
    """The archive fills with the games' cells (each with a state that loads), a quarter of the games restart
    from archived states each time, and a checkpoint carries the archive and the generator: a trainer
    loaded from it holds the same archive and draws the same cells next."""
    flags = ('--swarm.mode', 'go_explore', '--swarm.interval', '512', '--swarm.fraction', '0.25')
    with keyrooms_trainer(*flags) as trainer:
        for _ in range(4):
            trainer.rollout()
            trainer.update()
        archive = trainer.explorer.archive
        assert trainer.explore_stats['moved'] == 8 and trainer.explore_stats['cells'] == len(archive) >= 2
        assert trainer.explore_stats['cells_found'] >= len(archive)
        cells = set(trainer.vecenv.game_cells().tolist())
        for cell, entry in archive.cells.items():  # each archived state is a state of its cell
            trainer.vecenv.set_states([0], [entry.state])
            assert trainer.vecenv.game_cells()[0] == cell
        assert cells  # the games' own cells were counted as seen
        (tmp_path / 'checkpoints').mkdir()
        path = trainer.save(str(tmp_path))
        state = load_checkpoint(path)
        with keyrooms_trainer(*flags) as resumed:
            resumed.load_state_dict(state, path)
            assert resumed.explorer.archive.cells == archive.cells
            assert resumed.explorer.archive.found == archive.found and resumed.explorer.moves == trainer.explorer.moves
            assert resumed.explorer.archive.choose(5, resumed.explorer.rng) == archive.choose(5, trainer.explorer.rng)


def test_swarm_on_an_env_that_cannot_save_its_state_names_the_env_and_the_option():
    config = configuration.load('CartPole-v1', ['--vec.backend', 'Serial', '--vec.num-envs', '2',
                                                '--swarm.mode', 'swarm'])
    vecenv = training.make_vecenv('CartPole-v1', config)
    try:
        with pytest.raises(configuration.ConfigError, match=r"swarm.mode='swarm' moves games by saving and "
                                                            r"loading their states, and CartPole-v1 cannot.*\"off\""):
            Trainer(config, vecenv, make_policy(vecenv, config), env_name='CartPole-v1')
    finally:
        vecenv.close()


@pytest.mark.parametrize('flags,match', [
    (['--swarm.mode', 'swarm', '--swarm.stat', 'gold'],
     "swarm.stat='gold' is not a progress counter of puffer_keyrooms; it has: rooms, keys"),
])
def test_unknown_stat_lists_the_envs_counters(flags, match):
    with pytest.raises(configuration.ConfigError, match=match), keyrooms_trainer(*flags):
        pass


def test_modes_the_env_cannot_serve_say_which_to_use():
    config = configuration.load('puffer_squared', [*SMALL, '--vec.backend', 'Serial', '--swarm.mode', 'swarm'])
    vecenv = training.make_vecenv('puffer_squared', config)
    try:
        with pytest.raises(configuration.ConfigError, match='puffer_squared reports none; use swarm.mode="go_explore"'):
            Trainer(config, vecenv, make_policy(vecenv, config), env_name='puffer_squared')
        config['swarm']['mode'] = 'go_explore'
        with pytest.raises(configuration.ConfigError, match='puffer_squared has no cell function'):
            Trainer(config, vecenv, make_policy(vecenv, config), env_name='puffer_squared')
    finally:
        vecenv.close()


@pytest.mark.parametrize('flags,match', [
    (['--swarm.mode', 'swarms'], 'swarm.mode must be one of off, swarm, go_explore'),
    (['--swarm.mode', 'swarm', '--swarm.fraction', '0'], r'swarm.fraction must be in \(0, 1\]'),
    (['--swarm.mode', 'swarm', '--swarm.fraction', '1.5'], r'swarm.fraction must be in \(0, 1\]'),
    (['--swarm.mode', 'swarm', '--swarm.interval', '0'], 'swarm.interval must be >= 1'),
    (['--swarm.mode', 'swarm', '--swarm.fraction', '0.9', '--swarm.top-fraction', '0.2'],
     r'swarm.fraction \+ swarm.top_fraction must be at most 1'),
    (['--swarm.mode', 'go_explore', '--swarm.archive-size', '0'], 'swarm.archive_size must be >= 1'),
])
def test_bad_swarm_options_are_config_errors_naming_the_key(flags, match):
    with pytest.raises(configuration.ConfigError, match=match):
        configuration.validate(configuration.load('puffer_keyrooms', flags))
