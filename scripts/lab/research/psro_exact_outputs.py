"""Which meta-game lets PSRO with exact responses keep improving: the loop on poker tables (no networks),
each response `GameTree.best_response` to the meta-strategy, the meta-game either symmetric (one
mixture for both seats, what `puffer league` solves with PPO responses) or per seat (psro_v2's, what
`league.oracle = "exact"` solves). Prints the exploitability of the Nash output and of the population's
least exploitable symmetric mixture every --every responses (scripts/lab/results/league.md, "Exact
responses, and why the symmetric meta-game stalls").

    .venv/bin/python -m lab.research.psro_exact_outputs --game leduc --meta seats --responses 150
"""
import argparse
import time

import numpy as np

from pufferlib import league


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--game', choices=('kuhn', 'leduc'), default='leduc')
    parser.add_argument('--meta', choices=('symmetric', 'seats'), default='seats')
    parser.add_argument('--responses', type=int, default=150)
    parser.add_argument('--every', type=int, default=10)
    args = parser.parse_args()
    tree = league.game_tree(f'puffer_{args.game}')
    tables = [tree.legal / tree.legal.sum(1, keepdims=True)]  # start from uniform play, as psro_v2 does
    start = time.time()
    print('responses  seconds  nash_output  least_exploitable_mixture')
    for count in range(1, args.responses + 1):
        population = np.stack(tables)
        if args.meta == 'seats':
            seat0, seat1, _ = league.nash(tree.seat_payoffs(population, population))
        else:
            seat0 = seat1 = league.meta_strategy(tree.payoffs(population), 'nash')
        response, gain = tree.best_response(population, seat0, seat1)  # gain: the output's exploitability
        if count % args.every == 0:
            mixture = tree.least_exploitable(population)[0]
            print(f'{count:9d}  {time.time() - start:7.1f}  {gain:11.4f}  {mixture:25.4f}', flush=True)
        tables.append(response)


if __name__ == '__main__':
    main()
