#!/usr/bin/env python
"""Exploitability against wall-clock time on Leduc (or Kuhn) poker: the reference lines for population play.

    nice -n 5 flock /tmp/puffer-bench.lock .venv/bin/python -m lab.bench_league [--game leduc] [--budget 180]

Needs the league and bench extras (`pip install -e ".[league,bench]"`). Every method is an object with
`step()` (one iteration of its own training, timed) and `exploitability()` (NashConv / 2 of what it
would output now, by OpenSpiel's exact best response; not timed). The methods run interleaved, one
step each in turn, so a change in machine load hits all of them alike; each has its own clock, and
its exploitability is taken whenever that clock has grown by a factor of --eval-growth.

Methods measured today (peers, all OpenSpiel):
  cfr+        OpenSpiel's CFR+ (C++): the tabular reference line
  psro-os     OpenSpiel's psro_v2 with its exact best-response oracle (C++ TabularBestResponse) and
              the Nash meta-solver; the meta-game is estimated from --sims-per-entry sampled games
  psro        ours: `puffer league --league.method psro` (pufferlib/league.py), best responses by our PPO
              through the Arena on puffer_<game>, exact payoffs, the Nash LP; one step is one iteration.
              Its settings: --ours-steps, --ours-envs, --ours-eval-games, --ours-flags (any config flags).
MALib's published times to exploitability 0.5 on Leduc (32 cores) are printed for reference.
"""
import argparse
import contextlib
import io
import os
import shlex
import shutil
import sys
import time


from pufferlib import league

# MALib's reported seconds to reach exploitability 0.5 on Leduc poker (a 32-core machine); self-play
# never reached it. The published figures our league's speed is set against.
MALIB_TO_HALF = {'PSRO, alpha-rank': 1776, 'PSRO, fictitious play': 4862, 'fictitious self-play': 7562}
THRESHOLDS = (0.5, 0.1)


class CFRPlus:
    """OpenSpiel's C++ CFR+: one step is one iteration over the whole game tree."""

    name = 'cfr+'

    def __init__(self, game, args):
        import pyspiel
        self.game, self.solver = game, pyspiel.CFRPlusSolver(game)

    def step(self):
        self.solver.evaluate_and_update_policy()

    def exploitability(self):
        import pyspiel
        return pyspiel.exploitability(self.game, self.solver.average_policy())


class OpenSpielPSRO:
    """OpenSpiel's psro_v2 (the peer): exact best responses, a sampled meta-game, a meta-solver."""

    name = 'psro-os'

    def __init__(self, game, args):
        from open_spiel.python import policy
        try:  # psro_v2's meta-solvers import cvxpy, which only the bench extra installs
            from open_spiel.python.algorithms.psro_v2 import best_response_oracle, psro_v2, strategy_selectors
        except ImportError as e:
            raise SystemExit(f'bench_league.py: the psro-os peer needs {e.name or e}: pip install -e ".[bench]" '
                             '(or leave psro-os out of --methods)') from None
        self.game, self.env_name = game, f'puffer_{args.game}'
        start = policy.TabularPolicy(game)  # uniform random
        oracle = best_response_oracle.BestResponseOracle(game=game, policy=start)
        with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints its settings
            self.solver = psro_v2.PSROSolver(
                game, oracle, initial_policies=[start.__copy__() for _ in range(2)],
                training_strategy_selector=strategy_selectors.probabilistic, sims_per_entry=args.sims_per_entry,
                meta_strategy_method=args.meta, sample_from_marginals=True, symmetric_game=False)

    def step(self):
        self.solver.iteration()

    def exploitability(self):
        from open_spiel.python.algorithms import exploitability, policy_aggregator
        policies, weights = self.solver.get_policies(), self.solver.get_meta_strategies()
        mixed = policy_aggregator.PolicyAggregator(self.game).aggregate([0, 1], policies, weights)
        return exploitability.exploitability(self.game, mixed)


class OursPSRO:
    """Our league (PSRO) in a temporary league directory; one step is one league iteration."""

    name = 'psro'

    def __init__(self, game, args):
        import tempfile
        import torch
        torch.set_num_threads(1)  # small networks: threads only contend on a shared box
        self.tmp = tempfile.TemporaryDirectory(prefix='bench-league-')
        flags = ['--league.method', 'psro', '--league.meta-solver', args.ours_meta, '--league.iterations', '1000000']
        for flag, value in (('steps-per-iteration', args.ours_steps), ('num-envs', args.ours_envs),
                            ('eval-games', args.ours_eval_games)):
            if value is not None:  # else the env's config file decides
                flags += [f'--league.{flag}', str(value)]
        flags += args.ours_flags.split()
        self.league = league.League(league.create(f'puffer_{args.game}', flags, root=self.tmp.name))
        self.league.open()
        self.league.iterate(referee=False)  # the untrained start, like psro-os's uniform policy

    def step(self):
        self.league.iterate(referee=False)

    def exploitability(self):
        lg = self.league
        return lg.exploitability(lg.names, lg.networks, lg.output, lg.output_seat1)


METHODS = {'cfr+': CFRPlus, 'psro-os': OpenSpielPSRO, 'psro': OursPSRO}


CLOCKS = {'wall': time.perf_counter, 'cpu': time.process_time}


def run(methods, budgets, eval_growth, first_eval, clock='wall'):
    """Step the methods in turn until each has used its budget (`budgets[name]` seconds of `clock`);
    return {name: [(t, iterations, expl)]}."""
    now = CLOCKS[clock]
    clocks = {m.name: 0.0 for m in methods}
    steps = {m.name: 0 for m in methods}
    next_eval = {m.name: first_eval for m in methods}
    curves = {m.name: [(0.0, 0, m.exploitability())] for m in methods}
    while any(clocks[m.name] < budgets[m.name] for m in methods):
        for m in methods:
            budget = budgets[m.name]
            if clocks[m.name] >= budget:
                continue
            start = now()
            m.step()
            clocks[m.name] += now() - start
            steps[m.name] += 1
            if clocks[m.name] >= next_eval[m.name] or clocks[m.name] >= budget:
                curves[m.name].append((clocks[m.name], steps[m.name], m.exploitability()))
                next_eval[m.name] = clocks[m.name] * eval_growth
                # progress on stderr (a 30-minute run prints its tables only at the end); stdout stays the report
                print(f'{m.name}: {clocks[m.name]:.1f} of {budget:g} s, {steps[m.name]} iterations, exploitability '
                      f'{curves[m.name][-1][2]:.4f}', file=sys.stderr, flush=True)
    return curves


def at(curve, t):
    """Exploitability of the last evaluation at or before t seconds."""
    return [e for s, _, e in curve if s <= t][-1]


def time_to(curve, threshold):
    hit = [s for s, _, e in curve if e <= threshold]
    return f'{hit[0]:.1f}' if hit else '-'


def report(curves, budgets, game, clock='wall'):
    names = list(curves)
    budget = max(budgets.values())
    marks = [t for t in (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 180, 300, 600, 1200, 1800, 3600) if t <= budget]
    seconds = 'wall-clock seconds' if clock == 'wall' else 'CPU seconds (process time; not wall-clock)'
    lines = [f'Exploitability (NashConv / 2) on {game} against {seconds}, one process:', '',
             '| seconds | ' + ' | '.join(names) + ' |', '|---:|' + '---:|' * len(names)]
    for t in marks:
        lines.append(f'| {t:g} | ' + ' | '.join(f'{at(curves[n], t):.4f}' for n in names) + ' |')
    lines += ['', '| method | iterations | final exploitability | ' +
              ' | '.join(f'seconds to {x}' for x in THRESHOLDS) + ' |', '|---|---:|---:|' + '---:|' * len(THRESHOLDS)]
    for n in names:
        _, iterations, final = curves[n][-1]
        reached = ' | '.join(time_to(curves[n], x) for x in THRESHOLDS)
        lines.append(f'| {n} | {iterations} | {final:.4f} | {reached} |')
    short = [n for n in names if budgets[n] < budget]
    if short:
        lines += ['', 'Shorter budgets (the table repeats their last value after it): ' +
                  ', '.join(f'{n} {budgets[n]:g} s' for n in short) + '.']
    if game == 'leduc':
        lines += ['', 'MALib (32 cores) seconds to 0.5: ' +
                  ', '.join(f'{k} {v}' for k, v in MALIB_TO_HALF.items()) + '; self-play never reached it.']
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--game', choices=['leduc', 'kuhn'], default='leduc')
    parser.add_argument('--budget', type=float, default=180.0, help='seconds of compute per method (default 180; '
                        '1800 for the 0.1-in-30-minutes target)')
    parser.add_argument('--budgets', default='', help='other budgets for some methods, e.g. cfr+=20 (CFR+ is at '
                        'its floor within seconds; a shorter budget keeps a long comparison short)')
    parser.add_argument('--clock', choices=sorted(CLOCKS), default='wall', help='wall: wall-clock seconds (the '
                        'benchmark); cpu: each method\'s CPU seconds, to compare variants on a busy machine')
    parser.add_argument('--methods', default=','.join(METHODS), help=f'comma-separated subset of {", ".join(METHODS)}')
    parser.add_argument('--meta', default='nash', help='meta-solver of psro-os: nash, alpharank, uniform, prd')
    parser.add_argument('--sims-per-entry', type=int, default=100, help='games per meta-game entry for psro-os')
    parser.add_argument('--eval-growth', type=float, default=1.5, help='evaluate when a clock grew by this factor')
    parser.add_argument('--first-eval', type=float, default=0.25, help='first evaluation after this many seconds')
    parser.add_argument('--ours-steps', type=int, default=None, help='PPO steps per response round of our psro '
                        '(default: league.steps_per_iteration of pufferlib/config/puffer_<game>.toml)')
    parser.add_argument('--ours-envs', type=int, default=None, help='games in the arena of our psro (default: '
                        'the config file\'s league.num_envs)')
    parser.add_argument('--ours-eval-games', type=int, default=None, help='rated games per pair in our psro '
                        '(default: the config file\'s league.eval_games)')
    parser.add_argument('--ours-meta', default='nash', help='meta-solver of our psro: nash, fictitious_play, alpharank')
    parser.add_argument('--write-doc', metavar='PATH', help='also write the table into PATH '
                        '(scripts/lab/results/league.md) between '
                        'its "<!-- bench_league GAME:start -->" and "<!-- bench_league GAME:end -->" lines')
    parser.add_argument('--ours-flags', default='', help='more config flags for our psro (its PPO settings come '
                        'from pufferlib/config/puffer_<game>.toml)')
    parser.add_argument('--keep-league', metavar='DIR', help='copy our psro\'s league directory to DIR at the end '
                        '(else it is a temporary one), e.g. for scripts/lab/research/psro_population_bound.py')
    args = parser.parse_args(argv)
    if args.keep_league and os.path.exists(args.keep_league):
        parser.error(f'--keep-league {args.keep_league}: it exists already; name a new directory')
    chosen = [m.strip() for m in args.methods.split(',') if m.strip()]
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        parser.error(f'unknown method(s) {", ".join(unknown)}; choose from {", ".join(METHODS)}')
    budgets = {m: args.budget for m in chosen}
    for item in filter(None, (part.strip() for part in args.budgets.split(','))):
        name, _, value = item.partition('=')
        if name.strip() not in budgets:
            parser.error(f'--budgets {item!r}: {name.strip()!r} is not one of the --methods ({", ".join(chosen)})')
        try:
            budgets[name.strip()] = float(value)
        except ValueError:
            parser.error(f'--budgets {item!r}: give METHOD=SECONDS, e.g. cfr+=20')
    if args.write_doc:
        doc_block(args.write_doc, args.game)  # a missing block fails now, not after the run
    game = league.openspiel_game(f'puffer_{args.game}')
    methods = [METHODS[m](game, args) for m in chosen]
    curves = run(methods, budgets, args.eval_growth, args.first_eval, args.clock)
    for m in methods:
        if args.keep_league and isinstance(m, OursPSRO):
            shutil.copytree(m.league.path, args.keep_league)
    text = report(curves, budgets, args.game, args.clock)
    print(text)
    if args.write_doc:
        command = ' '.join(shlex.quote(a) for a in ['.venv/bin/python', '-m', 'lab.bench_league', *without_keep(
            sys.argv[1:] if argv is None else argv)])
        when = time.strftime('%Y-%m-%d %H:%M', time.gmtime())
        write_doc(args.write_doc, args.game, f'Written by the command below on {when} UTC ({os.cpu_count()} cores):'
                  f'\n\n```bash\n{command}\n```\n\n{text}')
    return 0


def without_keep(argv):
    """The command line less --keep-league DIR: where this machine kept a copy means nothing to a reader."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == '--keep-league':
            skip = True
        elif not arg.startswith('--keep-league='):
            kept.append(arg)
    return kept


def doc_block(path, game):
    """(text before, text after) the block of `path` that --write-doc replaces for `game`."""
    start, end = f'<!-- bench_league {game}:start -->', f'<!-- bench_league {game}:end -->'
    try:
        doc = open(path).read()
    except OSError as e:
        raise SystemExit(f'bench_league.py: --write-doc {path}: {e.strerror}') from None
    if doc.count(start) != 1 or doc.count(end) != 1 or doc.index(start) > doc.index(end):
        raise SystemExit(f'bench_league.py: --write-doc {path} needs one "{start}" line and one "{end}" line '
                         'after it, around the block to replace')
    before, rest = doc.split(start, 1)
    return before + start + '\n', '\n' + end + rest.split(end, 1)[1]


def write_doc(path, game, text):
    """Replace the game's block of `path` with `text` (the run's own output), atomically."""
    before, after = doc_block(path, game)
    tmp = f'{path}.tmp'
    with open(tmp, 'w') as f:
        f.write(before + text + after)
    os.replace(tmp, path)


if __name__ == '__main__':
    sys.exit(main())
