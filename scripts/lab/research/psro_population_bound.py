"""How good a mixture a poker league's population contains, against what its meta-solver outputs
(scripts/lab/results/league.md, "What limits our PSRO"). For a league directory of `puffer_kuhn` or `puffer_leduc`
(`puffer league`, or `python -m lab.bench_league --keep-league DIR`), at a few points of its ledger: the
exploitability of the league's output then, and of the least exploitable mixture of the policies it had
then (`GameTree.least_exploitable`: one LP over the whole game). The second is a floor for every
meta-solver over that population: when the output sits far above it, the meta-solver leaves
exploitability on the table; when both are high, the responses are what is missing.

    .venv/bin/python -m lab.research.psro_population_bound experiments/leagues/puffer_leduc-psro-... [--points 8]
"""
import argparse

import numpy as np

from pufferlib import league
from pufferlib.arena import NetworkPlayer


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('league_dir')
    parser.add_argument('--points', type=int, default=8, help='ledger points to measure (the last one always)')
    parser.add_argument('--at', default='', help='or these population sizes, comma-separated (e.g. the iterations '
                        'bench_league.py printed at its measurements)')
    args = parser.parse_args(argv)
    run = league.League(args.league_dir)
    if run.env not in league.OPENSPIEL_GAMES:
        raise SystemExit(f'{run.env}: the population bound needs an exact game tree; it exists for '
                         f'{", ".join(league.OPENSPIEL_GAMES)}')
    records, names, _, _ = run.state()
    if not records:
        raise SystemExit(f'{args.league_dir}: no finished iteration in the ledger yet')
    tree = league.game_tree(run.env)
    arena = run.open_env(run.env, run.config, 1)  # the spaces the networks are made for
    try:
        tables = np.stack([tree.tabulate(NetworkPlayer(run.load_policy(name, arena)).probabilities) for name in names])
    finally:
        arena.close()
    points = sorted({int(k) for k in np.linspace(1, len(records), min(args.points, len(records)))})
    if args.at:
        try:
            points = sorted({int(k) for k in args.at.split(',')})
        except ValueError:
            raise SystemExit(f'--at {args.at!r}: give population sizes, e.g. --at 50,100') from None
        if points[0] < 1 or points[-1] > len(records):
            raise SystemExit(f'--at {args.at!r}: the ledger has populations of 1 to {len(records)} policies')
    print(f'{run.env}, {len(records)} policies; exploitability (NashConv / 2) of the output and of the population\'s '
          f'least exploitable mixture')
    print('| policies | league seconds | output | least exploitable mixture | its support |')
    print('|---:|---:|---:|---:|---:|')
    for count in points:
        record = records[count - 1]
        output = np.asarray(record['meta'], dtype=np.float64)
        shown, _ = tree.least_exploitable(tables[:count], output)
        best, weights = tree.least_exploitable(tables[:count])
        print(f'| {count} | {record["seconds"]:.0f} | {shown:.4f} | {best:.4f} | {int((weights > 1e-6).sum())} |',
              flush=True)


if __name__ == '__main__':
    main()
