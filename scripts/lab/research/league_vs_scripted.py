"""Win rates of a league's policies against the env's scripted player, from each seat, with more games
and other seeds than the league's own per-iteration check (scripts/lab/results/league.md, Connect4). By default it
measures the leaderboard's first policy and the league's last one.

    .venv/bin/python -m lab.research.league_vs_scripted experiments/leagues/puffer_connect4-fsp-... \\
        [--policies p117 p119] [--games 20000] [--seeds 1 2]

Every one of the env's games plays the same number of games and only those count (league.scripted_task),
so fast games are not over-counted. With 20,000 games a rate near 90% is known to about +-0.4 points
(two standard errors).
"""
import argparse
import json
import os
import sys

import numpy as np

from pufferlib import league
from pufferlib.arena import LeagueError


def default_policies(run: league.League) -> list[str]:
    """The leaderboard's first network policy and the latest one (one name if they are the same)."""
    with open(os.path.join(run.path, 'ledger.jsonl')) as f:
        rows = [r for r in map(json.loads, f) if r['type'] == 'iteration']
    if not rows:
        raise LeagueError(f'{run.path} has no finished iteration yet: nothing to measure')
    board = league.Ratings.from_dict(rows[-1]['ratings']).leaderboard()
    top = next(r['name'] for r in board if not r['baseline'])
    return list(dict.fromkeys([top, rows[-1]['policy']]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('league', help='a league directory (experiments/leagues/...)')
    parser.add_argument('--policies', nargs='+', help='policy names (default: the top-rated and the latest)')
    parser.add_argument('--games', type=int, default=20000, help='games per seat and seed (default 20000)')
    parser.add_argument('--seeds', type=int, nargs='+', default=[1, 2], help='env and sampling seeds (default 1 2)')
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f'--games must be at least 1, got {args.games}')
    try:
        run = league.League(args.league)
        config = {section: dict(values) for section, values in run.config.items()}
        if 'seat' not in config['env'] or 'two_player' not in config['env']:
            raise LeagueError(f'{run.env} has no scripted player to measure against (no env.seat and '
                              'env.two_player settings)')
        config['league']['scripted_games'] = args.games
        names = args.policies or default_policies(run)
        arena = run.open_env(run.env, config, 1)
        try:
            states = {name: league.policy_state(run.load_policy(name, arena)) for name in names}
        finally:
            arena.close()
    except LeagueError as e:
        sys.exit(f'error: {e}')
    print(f'{run.env}, {args.games:,} games per seat and seed against the scripted player')
    print('| policy | seed | wins, seat 0 | wins, seat 1 |')
    print('|---|---:|---:|---:|')
    for name in names:
        for seed in args.seeds:
            outcomes = league.scripted_task(run.env, config, seed, states[name])
            rates = [float((np.asarray(outcomes[f'seat{s}']) > 0).mean()) for s in (0, 1)]
            print(f'| {name} | {seed} | {rates[0]:.1%} | {rates[1]:.1%} |', flush=True)


if __name__ == '__main__':
    main()
