"""How close each PSRO response of ours comes to an exact best response (scripts/lab/results/league.md, "What limits
our PSRO"). Per iteration: the exploitability of the meta-strategy the response was trained against
(what an exact best response gains against it, in the symmetric meta-game), what the trained response
gains against it (exact, GameTree), and what its greedy (argmax) version would gain.

    .venv/bin/python -m lab.research.psro_oracle_gap --game kuhn --iterations 10 [config flags...]
"""
import argparse
import tempfile
import time

import numpy as np
import torch

from pufferlib import league
from pufferlib.arena import NetworkPlayer


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--game', default='kuhn', choices=['kuhn', 'leduc'])
    parser.add_argument('--iterations', type=int, default=10)
    args, flags = parser.parse_known_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as root:
        flags = ['--league.method', 'psro', '--league.steps-per-iteration', '200000', '--league.num-envs', '1024',
                 '--league.iterations', '1000000', *flags]
        run = league.League(league.create(f'puffer_{args.game}', flags, root=root))
        run.open()
        run.iterate(referee=False)
        tree, start = run._tree(), time.time()
        print('| iteration | seconds | exact best response gains | response gains | greedy response gains |')
        print('|---:|---:|---:|---:|---:|')
        for _ in range(args.iterations):
            weights, before = run.output.copy(), len(run.names)
            target = run.exploitability(run.names, run.networks, weights)
            run.iterate(referee=False)
            tables = np.stack([tree.tabulate(NetworkPlayer(n).probabilities) for n in run.networks])
            greedy = (tables[-1] == tables[-1].max(1, keepdims=True)).astype(np.float64)
            greedy /= greedy.sum(1, keepdims=True)
            gains = [float(tree.payoffs(t[None], tables[:before])[0] @ weights) for t in (tables[-1], greedy)]
            print(f'| {before} | {time.time() - start:.0f} | {target:.4f} | {gains[0]:.4f} | {gains[1]:.4f} |',
                  flush=True)
        run.close()


if __name__ == '__main__':
    main()
