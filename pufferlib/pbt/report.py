"""`puffer pbt --report`: a population's table (each member's values and score, round by round) and pbt.png.
"""
from __future__ import annotations

import os
from pathlib import Path


from pufferlib import invocation
from pufferlib.sweep.space import short
from pufferlib.sweep.trials import AUTO_METRICS
from pufferlib.pbt.ledger import Population, State
from pufferlib.pbt.space import PBTError, Printer




def report(path: str, printer: Printer | None = None) -> list[str]:
    """Print each member's score per round and its values now; write pbt.png (score and each key over the
    rounds, per member, exploits marked); return the PNG's path."""
    pop = Population(path)
    state = State(pop.ledger.read())
    rounds = sorted({r for r, _ in state.trained})
    if not rounds:
        raise PBTError(f'the population {path} has trained no round yet; run it with '
                       f'`{invocation.command("pbt", "--resume", Path(path))}`')
    (printer or print)(table(pop, state, rounds))
    return [plot(pop, state, rounds)]


def table(pop: Population, state: State, rounds: list[int]) -> str:
    """A plain-text table: member, its score in each round ('*' where it was copied over after the round),
    times copied, and its values now."""
    names = [name.split('.', 1)[1] if [n.split('.', 1)[1] for n in pop.space.names].count(name.split('.', 1)[1]) == 1
             else name for name in pop.space.names]
    shown = rounds[-8:]  # the last rounds fit a terminal; pbt.png has them all
    header = ['member', *[f'r{r + 1}' for r in shown], 'copied', *names]
    rows = []
    for m in range(pop.size):
        copied = [r for r, rec in state.exploits.items() for e in rec['exploits'] if e['member'] == m]
        cells = [str(m)]
        for r in shown:
            t = state.trained.get((r, m))
            score = '-' if t is None else ('failed' if t['score'] is None else f'{t["score"]:.4g}')
            cells.append(score + ('*' if r in copied else ''))
        cells.append(str(len(copied)))
        cells += [short(state.values[m].get(name)) for name in pop.space.names]
        rows.append(cells)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    metric = next((t['metric'] for t in state.trained.values()), pop.settings['metric'] or AUTO_METRICS[0])
    lines = [f'pbt {pop.env}: {pop.size} members, round {len(state.done)}/{pop.rounds} done, {metric} '
             f'({pop.settings["goal"]}); * = copied from a better member after that round']
    lines += ['  '.join(cell.rjust(w) for cell, w in zip(row, widths)) for row in [header, *rows]]
    return '\n'.join(lines)


def plot(pop: Population, state: State, rounds: list[int]) -> str:
    """pbt.png: the score of each member per round (top), then each perturbed key's value per round; a dot marks
    the round after which a member was copied over."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    keys = pop.space.params
    fig, axes = plt.subplots(1 + len(keys), 1, figsize=(9, 2.2 * (1 + len(keys))), sharex=True, squeeze=False)
    colours = plt.get_cmap('tab10' if pop.size <= 10 else 'tab20')
    steps = [pop.round_end(r) for r in range(pop.rounds)]
    for m in range(pop.size):
        colour = colours(m % colours.N)
        copied = {r for r, rec in state.exploits.items() for e in rec['exploits'] if e['member'] == m}
        xs = [steps[r] for r in rounds if (r, m) in state.trained and state.trained[(r, m)]['score'] is not None]
        ys = [state.trained[(r, m)]['score'] for r in rounds
              if (r, m) in state.trained and state.trained[(r, m)]['score'] is not None]
        axes[0][0].plot(xs, ys, '-', color=colour, label=f'member {m}')
        marks = [(steps[r], state.trained[(r, m)]['score']) for r in copied
                 if (r, m) in state.trained and state.trained[(r, m)]['score'] is not None]
        if marks:
            axes[0][0].plot(*zip(*marks), 'o', color=colour, markersize=4)
        schedule = state.schedule(m, max(rounds) + 1)
        starts = [r * pop.settings['interval'] for r in range(len(schedule))]
        for ax, p in zip(axes[1:], keys):
            ax[0].step([*starts, steps[len(schedule) - 1]], [*(v.get(p.name) for v in schedule),
                                                             schedule[-1].get(p.name)], where='post', color=colour)
    metric = next((t['metric'] for t in state.trained.values()), pop.settings['metric'])
    axes[0][0].set_ylabel(metric)
    axes[0][0].set_title(f'pbt {pop.env}: {pop.size} members, dots: copied over after that round')
    axes[0][0].legend(fontsize='x-small', ncol=max(1, pop.size // 8), loc='best')
    for ax, p in zip(axes[1:], keys):
        ax[0].set_ylabel(p.name.split('.', 1)[1], fontsize='small')
        if p.distribution in ('log', 'pow2'):
            ax[0].set_yscale('log')
    axes[-1][0].set_xlabel('agent steps per member')
    fig.tight_layout()
    out = os.path.join(pop.path, 'pbt.png')
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out

