"""What our symmetric PSRO would reach with perfect responses: the same loop as `puffer league
--league.method psro` on the poker envs (one population playing both seats, exact payoffs by GameTree,
the Nash LP), but each response is OpenSpiel's exact best response to the meta-strategy instead of a
PPO response. A measuring stick only (scripts/lab/results/league.md, "What limits our PSRO"): how many iterations
the meta-game itself needs to reach an exploitability, so that a PPO run can be judged by how far its
responses fall short, not by the loop.

    .venv/bin/python -m lab.research.psro_exact_ceiling --game leduc --iterations 150
"""
import argparse
import time

import numpy as np

from pufferlib import league


def best_response_table(game, tree, mixture):
    """One table for both seats: each seat's information states play OpenSpiel's exact best response
    (pure) to the mixture (an OpenSpiel TabularPolicy) in that seat."""
    from open_spiel.python.algorithms import best_response
    table, _, _ = league.information_states(game)
    probs = np.zeros((tree.states, tree.actions))
    responders = [best_response.BestResponsePolicy(game, player, mixture) for player in (0, 1)]
    for row, state in enumerate(table.states):
        player = state.current_player()
        probs[row, responders[player].best_response_action(state.information_state_string(player))] = 1.0
    return probs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--game', default='leduc', choices=['kuhn', 'leduc'])
    parser.add_argument('--iterations', type=int, default=150)
    parser.add_argument('--every', type=int, default=5, help='print every this many iterations')
    parser.add_argument('--seats', choices=['shared', 'separate'], default='shared', help='shared: one meta-strategy '
                        'over the population for both seats (the symmetric meta-game, as our league); separate: one '
                        'per seat, the Nash of the seat-0 against seat-1 matrix game (as OpenSpiel\'s psro_v2)')
    args = parser.parse_args()
    from open_spiel.python.algorithms import policy_aggregator
    env = f'puffer_{args.game}'
    game, tree = league.openspiel_game(env), league.GameTree(env)
    tables = [tree.legal / tree.legal.sum(1, keepdims=True)]  # the untrained start: uniform
    weights, start = [np.ones(1), np.ones(1)], time.time()
    print('| iteration | exploitability | support | seconds |')
    print('|---:|---:|---:|---:|')
    for iteration in range(1, args.iterations + 1):
        members = [tree.to_openspiel(t) for t in tables]
        mixed = policy_aggregator.PolicyAggregator(game).aggregate(
            [0, 1], [members, members], [w.tolist() for w in weights]).to_tabular()
        exploit = league.exploitability(env, mixed)
        if iteration % args.every == 1 or args.every == 1 or exploit <= 0.1:
            support = '/'.join(str(int((w > 0).sum())) for w in weights)
            print(f'| {iteration - 1} | {exploit:.4f} | {support} | {time.time() - start:.0f} |',
                  flush=True)
        tables.append(best_response_table(game, tree, mixed))
        if args.seats == 'shared':
            weights = [league.meta_strategy(tree.payoffs(np.stack(tables)), 'nash')] * 2
        else:  # seat 0's payoff, member i in seat 0 against member j in seat 1
            weights = list(league.nash(tree.seat_payoffs(np.stack(tables), np.stack(tables)))[:2])
        weights = [np.clip(w, 0.0, None) / np.clip(w, 0.0, None).sum() for w in weights]


if __name__ == '__main__':
    main()
