"""The game-theory toolkit of pufferlib/league/: meta-game solvers, payoff table, ratings, and
OpenSpiel as the exploitability referee. Every test has a known answer."""
import json
import subprocess
import sys

import numpy as np
import pytest

from pufferlib import league
from pufferlib.pufferenv import APIUsageError

pytest.importorskip('scipy')
pytest.importorskip('openskill')
pyspiel = pytest.importorskip('pyspiel')

RPS = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=float)
PENNIES = np.array([[1, -1], [-1, 1]], dtype=float)
# Strategy 0 strictly dominates 1, which strictly dominates 2 (a transitive, symmetric zero-sum game).
DOMINATED = np.array([[0, 1, 2], [-1, 0, 1], [-2, -1, 0]], dtype=float)


# ---------------------------------------------------------------------------------------------
# Meta-game solvers
# ---------------------------------------------------------------------------------------------

def test_nash_of_rock_paper_scissors_is_uniform_with_value_zero():
    row, col, value = league.nash(RPS)
    np.testing.assert_allclose(row, [1 / 3] * 3, atol=1e-9)
    np.testing.assert_allclose(col, [1 / 3] * 3, atol=1e-9)
    assert value == pytest.approx(0, abs=1e-9)


def test_nash_of_matching_pennies_and_of_a_biased_version():
    row, col, value = league.nash(PENNIES)
    np.testing.assert_allclose(row, [0.5, 0.5], atol=1e-9)
    np.testing.assert_allclose(col, [0.5, 0.5], atol=1e-9)
    assert value == pytest.approx(0, abs=1e-9)
    # [[3, -1], [-1, 1]]: the row player mixes 1/3 on heads, the column player 1/3 too, value 1/3
    row, col, value = league.nash([[3, -1], [-1, 1]])
    np.testing.assert_allclose(row, [1 / 3, 2 / 3], atol=1e-9)
    np.testing.assert_allclose(col, [1 / 3, 2 / 3], atol=1e-9)
    assert value == pytest.approx(1 / 3, abs=1e-9)


def test_nash_plays_the_dominant_strategy_and_handles_rectangular_games():
    row, col, value = league.nash(DOMINATED)
    np.testing.assert_allclose(row, [1, 0, 0], atol=1e-9)
    np.testing.assert_allclose(col, [1, 0, 0], atol=1e-9)
    # 2x3 game with a saddle point: row 1 guarantees 2, column 2 concedes at most 2
    row, col, value = league.nash([[1, 5, 0], [4, 3, 2]])
    np.testing.assert_allclose(row, [0, 1], atol=1e-9)
    np.testing.assert_allclose(col, [0, 0, 1], atol=1e-9)
    assert value == pytest.approx(2)


def test_nash_is_an_equilibrium_of_random_games():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m, n = rng.integers(2, 9, size=2)
        matrix = rng.normal(size=(m, n))
        row, col, value = league.nash(matrix)
        # neither player gains by deviating to any pure strategy
        assert (matrix @ col).max() <= value + 1e-7
        assert (row @ matrix).min() >= value - 1e-7
        assert row.sum() == pytest.approx(1) and col.sum() == pytest.approx(1)


def test_fictitious_play_approaches_the_nash_of_known_games():
    for matrix, target in ((RPS, [1 / 3] * 3), (PENNIES, [0.5, 0.5]), (DOMINATED, [1, 0, 0])):
        row, col = league.fictitious_play(matrix, iterations=20_000)
        np.testing.assert_allclose(row, target, atol=0.02)
        np.testing.assert_allclose(col, target, atol=0.02)
    # general-sum: the prisoner's dilemma (0 cooperate, 1 defect), where both players settle on defecting
    row, col = league.fictitious_play([[3, 0], [5, 1]], iterations=2000, col_payoffs=[[3, 5], [0, 1]])
    assert row[1] > 0.99 and col[1] > 0.99


def test_alpharank_known_answers():
    np.testing.assert_allclose(league.alpharank(RPS), [1 / 3] * 3, atol=1e-6)
    assert league.alpharank(DOMINATED)[0] > 0.95
    assert league.alpharank(DOMINATED, alpha=1.0)[0] > 0.95
    assert league.alpharank([[0.0]]) == pytest.approx([1.0])


def test_meta_strategy_dispatches_and_rejects_unknown_methods():
    for method in league.META_SOLVERS:
        p = league.meta_strategy(RPS, method)
        np.testing.assert_allclose(p, [1 / 3] * 3, atol=0.02)
    with pytest.raises(APIUsageError, match="unknown meta-solver 'nsh'.*'nash'"):
        league.meta_strategy(RPS, 'nsh')


@pytest.mark.parametrize('bad, match', [
    ([[1, np.nan], [0, 1]], 'NaN'),
    ([1, 2, 3], '2-D'),
    ([[]], 'non-empty'),
    ('abc', '2-D array of numbers'),
])
def test_solvers_reject_bad_payoffs_with_one_clear_error(bad, match):
    with pytest.raises(APIUsageError, match=match):
        league.nash(bad)


def test_alpharank_reports_an_overflowing_alpha():
    with pytest.raises(APIUsageError, match='alpha=1000000.0 overflows'):
        league.alpharank(np.random.default_rng(0).normal(size=(12, 12)) * 5, alpha=1e6)
    with pytest.raises(APIUsageError, match='square'):
        league.alpharank([[0, 1, 2], [1, 0, 1]])


# ---------------------------------------------------------------------------------------------
# Payoff table
# ---------------------------------------------------------------------------------------------

def test_payoff_table_grows_one_policy_at_a_time_and_mirrors_zero_sum_games():
    table = league.PayoffTable()
    assert table.add('random') == 0
    assert table.missing() == [(0, 0)]
    table.record('random', 'random', 0.0, games=10)
    assert table.add('ppo-1') == 1
    assert table.missing() == [(0, 1), (1, 1)]
    table.record('ppo-1', 'random', 0.5, games=100)
    table.record(1, 0, 0.8, games=100)  # indices work too; means are game-weighted
    table.record('ppo-1', 'ppo-1', 0.3, games=4)  # a mirror match: zero-sum makes it 0
    m = table.matrix()
    assert m[1, 0] == pytest.approx(0.65) and m[0, 1] == pytest.approx(-0.65)
    assert m[1, 1] == pytest.approx(0) and m[0, 0] == pytest.approx(0)
    assert table.games()[1, 0] == 200 and table.games()[0, 1] == 200
    assert table.missing() == []
    table.add('ppo-2')
    assert np.isnan(table.matrix()[2]).all() and table.matrix(fill=0.0)[2, 0] == 0.0
    # the meta-game of the known part is solvable: ppo-1 dominates random
    assert league.nash(m)[0] == pytest.approx([0, 1])
    again = league.PayoffTable.from_dict(json.loads(json.dumps(table.to_dict())))
    np.testing.assert_array_equal(again.matrix(fill=7), table.matrix(fill=7))
    assert again.names == table.names


def test_payoff_table_general_sum_keeps_both_directions_apart():
    table = league.PayoffTable(['a', 'b'], zero_sum=False)
    table.record('a', 'b', 1.0)
    assert table.matrix()[0, 1] == 1.0 and np.isnan(table.matrix()[1, 0])
    assert table.missing() == [(0, 0), (1, 0), (1, 1)]


@pytest.mark.parametrize('call, match', [
    (lambda t: t.add('a'), "already in the table"),
    (lambda t: t.add(''), 'non-empty string'),
    (lambda t: t.record('a', 'zz', 1.0), "unknown policy 'zz'"),
    (lambda t: t.record(0, 5, 1.0), 'outside'),
    (lambda t: t.record('a', 'b', float('nan')), 'finite'),
    (lambda t: t.record('a', 'b', 1.0, games=0), 'games'),
])
def test_payoff_table_bad_input(call, match):
    table = league.PayoffTable(['a', 'b'])
    with pytest.raises(APIUsageError, match=match):
        call(table)
    assert table.games().sum() == 0  # nothing half-recorded


def test_payoff_table_from_a_corrupt_dict_is_one_clear_error():
    with pytest.raises(APIUsageError, match='not a saved payoff table'):
        league.PayoffTable.from_dict({'names': ['a']})
    with pytest.raises(APIUsageError, match='1 names but tables of shape'):
        league.PayoffTable.from_dict({'names': ['a'], 'zero_sum': True, 'sums': [[0, 0]], 'games': [[0, 0]]})


# ---------------------------------------------------------------------------------------------
# Ratings
# ---------------------------------------------------------------------------------------------

def test_ratings_order_a_known_win_matrix():
    """Four players where i beats j with probability WIN[i, j] (a strict skill order 0 > 1 > 2 > 3):
    the leaderboard recovers the order, baselines included."""
    names = ['strong', 'good', 'scripted', 'random']
    win = np.array([[0.5, 0.7, 0.85, 0.95],
                    [0.3, 0.5, 0.7, 0.85],
                    [0.15, 0.3, 0.5, 0.7],
                    [0.05, 0.15, 0.3, 0.5]])
    ratings = league.Ratings()
    for name in names:
        ratings.add(name, baseline=name in ('scripted', 'random'))
    rng = np.random.default_rng(0)
    for _ in range(300):
        i, j = rng.choice(4, size=2, replace=False)
        ratings.record(names[i], names[j], 1.0 if rng.random() < win[i, j] else -1.0)
    board = ratings.leaderboard()
    assert [row['name'] for row in board] == names
    assert [row['rank'] for row in board] == [1, 2, 3, 4]
    assert board[2]['baseline'] and not board[0]['baseline']
    assert sum(row['games'] for row in board) == 600
    assert ratings.win_probability('strong', 'random') > 0.8
    text = ratings.format_leaderboard()
    assert text.splitlines()[1].split()[:2] == ['1', 'strong'] and 'random (baseline)' in text
    again = league.Ratings.from_dict(json.loads(json.dumps(ratings.to_dict())))
    assert again.leaderboard() == board


def test_ratings_draws_keep_equal_players_equal():
    ratings = league.Ratings()
    ratings.add('a'), ratings.add('b')
    ratings.record_results('a', 'b', [0, 0, 0])
    (mu_a, sigma_a), (mu_b, sigma_b) = ratings.rating('a'), ratings.rating('b')
    assert mu_a == pytest.approx(mu_b) and sigma_a == pytest.approx(sigma_b)
    assert sigma_a < 25 / 3  # below the prior: draws carry information


def test_ratings_bad_input():
    ratings = league.Ratings()
    ratings.add('a')
    with pytest.raises(APIUsageError, match='already rated'):
        ratings.add('a')
    with pytest.raises(APIUsageError, match="unknown player 'b'"):
        ratings.record('a', 'b', 1)
    with pytest.raises(APIUsageError, match='cannot play itself'):
        ratings.record('a', 'a', 1)
    with pytest.raises(APIUsageError, match='not saved ratings'):
        league.Ratings.from_dict({'x': {'mu': 'high'}})


# ---------------------------------------------------------------------------------------------
# OpenSpiel referee
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('env_name, game_name, states', [('puffer_kuhn', 'kuhn_poker', 12),
                                                         ('puffer_leduc', 'leduc_poker', 936)])
def test_uniform_policy_exploitability_equals_openspiels_own(env_name, game_name, states):
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability
    game = pyspiel.load_game(game_name)
    theirs = exploitability.exploitability(game, policy_lib.UniformRandomPolicy(game))
    ours = league.exploitability(env_name, league.uniform_policy)
    assert ours == pytest.approx(theirs, abs=1e-9)
    # every information state has its own observation: the mapping is one to one
    _, obs, legal = league.information_states(game)
    assert len(obs) == states and len({row.tobytes() for row in obs}) == states
    assert (legal.sum(1) >= 2).all()


def cfr_plus(game_name, iterations):
    """OpenSpiel's (Python) CFR+ average policy after `iterations`, and its game."""
    from open_spiel.python.algorithms import cfr
    game = pyspiel.load_game(game_name)
    solver = cfr.CFRPlusSolver(game)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    return game, solver.average_policy()


def test_a_cfr_nash_policy_is_unexploitable_through_our_mapping():
    from open_spiel.python.algorithms import exploitability
    game, average = cfr_plus('kuhn_poker', 300)
    theirs = exploitability.exploitability(game, average)
    ours = league.exploitability('puffer_kuhn', league.policy_from_tabular(average))
    assert ours == pytest.approx(theirs, abs=1e-12) and ours < 2e-3
    # the same policy with actions permuted is far from Nash: the mapping really is being used
    flipped = league.exploitability('puffer_kuhn', lambda o, m: league.policy_from_tabular(average)(o, m)[:, ::-1])
    assert flipped > 0.1


@pytest.mark.slow
def test_a_cfr_policy_on_leduc_is_nearly_unexploitable_through_our_mapping():
    from open_spiel.python.algorithms import exploitability
    game, average = cfr_plus('leduc_poker', 100)
    ours = league.exploitability('puffer_leduc', league.policy_from_tabular(average))
    assert ours == pytest.approx(exploitability.exploitability(game, average), abs=1e-9) and ours < 0.05


def test_kuhn_known_nash_family_has_zero_exploitability():
    """Kuhn's equilibria are known in closed form (Kuhn 1950): with alpha in [0, 1/3], player 0 bets J
    with alpha, K with 3 alpha, calls with Q with alpha + 1/3; player 1 bets J after a pass with 1/3,
    calls Q with 1/3. Written directly against our observation encoding (player, card, betting)."""
    alpha = 0.2

    def nash(obs, legal):
        out = np.zeros((len(obs), 2))
        for k, row in enumerate(obs):
            player, card = int(row[1]), int(row[2:5].argmax())
            history = ''.join('pb'[int(row[5 + 2 * i:7 + 2 * i].argmax())] for i in range(3)
                              if row[5 + 2 * i:7 + 2 * i].any())
            if player == 0 and history == '':
                bet = [alpha, 0, 3 * alpha][card]
            elif player == 0:  # pass, bet: call or fold
                bet = [0, alpha + 1 / 3, 1][card]
            elif history == 'p':
                bet = [1 / 3, 0, 1][card]
            else:  # facing a bet
                bet = [0, 1 / 3, 1][card]
            out[k] = [1 - bet, bet]
        return out

    assert league.exploitability('puffer_kuhn', nash) == pytest.approx(0, abs=1e-12)
    # game value for player 0 is -1/18 at every equilibrium
    table = league.tabular_policy('puffer_kuhn', nash)
    from open_spiel.python.algorithms import expected_game_score
    game = pyspiel.load_game('kuhn_poker')
    value = expected_game_score.policy_value(game.new_initial_state(), [table, table])
    assert value[0] == pytest.approx(-1 / 18)


def test_mixture_exploitability():
    nash = league.policy_from_tabular(cfr_plus('kuhn_poker', 100)[1])
    always_bet = lambda o, m: np.tile([0.0, 1.0], (len(o), 1))  # noqa: E731
    e_nash = league.exploitability('puffer_kuhn', nash)
    e_bet = league.exploitability('puffer_kuhn', always_bet)
    assert league.mixture_exploitability('puffer_kuhn', [nash, always_bet], [1, 0]) == pytest.approx(e_nash)
    assert league.mixture_exploitability('puffer_kuhn', [always_bet, always_bet], [0.3, 0.7]) == pytest.approx(e_bet)
    mixed = league.mixture_exploitability('puffer_kuhn', [nash, always_bet], [0.5, 0.5])
    assert e_nash < mixed < e_bet  # exploitability is convex in the mixture, and this one is strict
    with pytest.raises(APIUsageError, match='one non-negative weight per policy'):
        league.mixture_exploitability('puffer_kuhn', [nash], [0.5, 0.5])


def test_mixture_exploitability_is_the_best_pure_reply_to_the_mixture():
    """Brute force: Kuhn has 2**12 pure policies; the best of them against the meta-strategy (each game
    draws one member and plays it throughout) must gain exactly what the referee's aggregated policy
    gives away. Averaging the members' action probabilities per information state, without weighting
    by each member's reach, would give a different (wrong) number for these two members."""
    import itertools
    tree = league.GameTree('puffer_kuhn')
    rng = np.random.default_rng(3)
    members = rng.dirichlet([0.3, 0.3], size=(2, tree.states)) * tree.legal
    weights = np.array([0.3, 0.7])
    pure = np.array([np.eye(2)[list(bits)] for bits in itertools.product((0, 1), repeat=tree.states)])
    best_seat0 = (tree.seat_payoffs(pure, members) @ weights).max()
    best_seat1 = (-tree.seat_payoffs(members, pure).T @ weights).max()
    brute = 0.5 * (best_seat0 + best_seat1)  # the members' own payoffs cancel: the game is zero-sum
    tables = [tree.to_openspiel(m) for m in members]
    assert league.mixture_exploitability('puffer_kuhn', tables, weights) == pytest.approx(brute, abs=1e-9)
    averaged = tree.to_openspiel((weights @ members.reshape(2, -1)).reshape(tree.states, tree.actions))
    assert league.exploitability('puffer_kuhn', averaged) != pytest.approx(brute, abs=1e-3)


def test_least_exploitable_mixture_agrees_with_the_referee_and_a_grid_search():
    """GameTree.least_exploitable's LP: with the weights fixed it gives the referee's exploitability of
    that mixture; left free, no mixture on a fine grid does better, and the grid's best is close."""
    tree = league.GameTree('puffer_kuhn')
    members = np.random.default_rng(5).dirichlet([0.5, 0.5], size=(2, tree.states)) * tree.legal
    tables = [tree.to_openspiel(m) for m in members]
    grid = np.linspace(0.0, 1.0, 201)
    referee = [league.mixture_exploitability('puffer_kuhn', tables, [w, 1 - w]) for w in grid]
    for w, expected in zip(grid[::40], referee[::40]):
        assert tree.least_exploitable(members, [w, 1 - w])[0] == pytest.approx(expected, abs=1e-9)
    best, weights = tree.least_exploitable(members)
    assert best <= min(referee) + 1e-9 and best >= min(referee) - 0.01
    assert league.mixture_exploitability('puffer_kuhn', tables, weights) == pytest.approx(best, abs=1e-9)


def test_least_exploitable_mixture_finds_the_equilibrium_in_the_population():
    from open_spiel.python.algorithms import exploitability
    game, average = cfr_plus('kuhn_poker', 300)
    tree = league.GameTree('puffer_kuhn')
    nash = tree.tabulate(league.policy_from_tabular(average))
    uniform = tree.legal / tree.legal.sum(1, keepdims=True)
    always_bet = tree.tabulate(lambda o, m: np.tile([0.0, 1.0], (len(o), 1)))
    value, weights = tree.least_exploitable(np.stack([uniform, nash, always_bet]))
    assert value == pytest.approx(exploitability.exploitability(game, average), abs=1e-9)
    assert weights[1] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(APIUsageError, match='one non-negative weight per table'):
        tree.least_exploitable(np.stack([uniform, nash]), [1.0, -1.0])
    with pytest.raises(APIUsageError, match='a policy table must be'):
        tree.least_exploitable(np.ones((2, 3, 2)))


@pytest.mark.parametrize('env_name', ['puffer_kuhn', 'puffer_leduc'])
def test_exact_best_response_gains_the_referees_exploitability(env_name):
    """GameTree.best_response: a deterministic table whose payoff against the mixture is the mixture's
    exploitability by OpenSpiel's referee, for one mixture in both seats and for a per-seat one."""
    tree = league.game_tree(env_name)
    rng = np.random.default_rng(3)
    members = rng.dirichlet([0.5] * tree.actions, size=(3, tree.states)) * tree.legal
    members /= members.sum(2, keepdims=True)
    tables = [tree.to_openspiel(m) for m in members]
    seat0, seat1 = np.array([0.2, 0.5, 0.3]), np.array([0.6, 0.0, 0.4])
    for weights, other in ((seat0, None), (seat0, seat1)):
        response, value = tree.best_response(members, weights, other)
        assert set(np.unique(response[response.max(1) == 1])) <= {0.0, 1.0}
        assert ((response > 0) <= tree.legal).all()
        assert value == pytest.approx(league.mixture_exploitability(env_name, tables, weights, other), abs=1e-9)
        theirs = 0.5 * (tree.seat_payoffs(response[None], members)[0] @ (weights if other is None else other)
                        - tree.seat_payoffs(members, response[None])[:, 0] @ weights)
        assert theirs == pytest.approx(value, abs=1e-9)  # the table really earns what the LP says
    with pytest.raises(APIUsageError, match='one non-negative weight per table'):
        tree.best_response(members, [1.0, -1.0, 0.0])


@pytest.mark.slow
def test_least_exploitable_on_leduc_matches_the_referee():
    tree = league.GameTree('puffer_leduc')
    rng = np.random.default_rng(7)
    members = rng.dirichlet([0.5] * 3, size=(3, tree.states)) * tree.legal
    members /= members.sum(2, keepdims=True)
    weights = np.array([0.2, 0.5, 0.3])
    tables = [tree.to_openspiel(m) for m in members]
    fixed = tree.least_exploitable(members, weights)[0]
    assert fixed == pytest.approx(league.mixture_exploitability('puffer_leduc', tables, weights), abs=1e-9)
    best, found = tree.least_exploitable(members)
    assert best <= fixed + 1e-9
    assert league.mixture_exploitability('puffer_leduc', tables, found) == pytest.approx(best, abs=1e-9)


def test_referee_bad_input():
    with pytest.raises(APIUsageError, match="no OpenSpiel referee for 'puffer_pong'"):
        league.exploitability('puffer_pong', league.uniform_policy)
    with pytest.raises(APIUsageError, match=r'shape \(12, 3\).*expected \(12, 2\)'):
        league.exploitability('kuhn', lambda o, m: np.ones((len(o), 3)))
    with pytest.raises(APIUsageError, match='negative or non-finite'):
        league.exploitability('kuhn', lambda o, m: np.full((len(o), 2), np.nan))
    # all mass on raise at a state where raising is illegal (after two raises)
    with pytest.raises(APIUsageError, match='no probability on a legal action'):
        league.exploitability('leduc', lambda o, m: np.tile([0.0, 0.0, 1.0], (len(o), 1)))


def test_the_package_names_every_public_name_and_the_toolkit_imports_without_torch():
    """pufferlib.league re-exports each module's public API; the loop, tasks and report load torch and are
    named lazily, so that the toolkit (and `puffer league --help`) works where torch is not installed."""
    for name in league.__all__:
        assert getattr(league, name) is not None, name
    assert league.report.__module__ == 'pufferlib.league.plots'  # a function, not a submodule
    with pytest.raises(AttributeError, match='no attribute'):
        league.no_such_name  # noqa: B018
    code = ('import sys; sys.modules["torch"] = None\n'  # any "import torch" now raises ImportError
            'from pufferlib import league\n'
            'print(league.meta_strategy([[0, 1], [-1, 0]], "uniform").tolist(), league.PayoffTable(["a"]).names)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ['[0.5,', '0.5]', "['a']"]
