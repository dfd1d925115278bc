#!/usr/bin/env python
"""Reproducible CPU baselines: docs/baselines.md and docs/baselines/<env>.png.

    python -m lab.baselines                          # every baseline below (about 20 minutes on 2 cores)
    python -m lab.baselines --only CartPole-v1       # one env (or several); the others keep their results
    python -m lab.baselines --replot                 # no training: redraw PNGs and the doc from the results files
    python -m lab.baselines --record-acceptance FILE # keep acceptance runs (acceptance_train.py --results FILE)
    python -m lab.baselines --print-commands         # the command of every baseline, as compose.yaml runs it

Each baseline is `puffer train ENV FLAGS --train.seed S` for seeds 0, 1, 2, then seed 0 again: the
spread over seeds is the score's uncertainty, the gap between the two seed-0 runs is the run-to-run
noise on the same hardware (the Multiprocessing backend does not make runs bit-identical).
Every run holds /tmp/puffer-cpu.lock (flock) so timings are not disturbed by other CPU jobs.
Results accumulate in docs/baselines/results.json, so `--only` reruns one env and rewrites the doc.
Runs land under $PUFFER_EXPERIMENTS (default /tmp/baselines), not in the repository.
"""
import argparse
import fcntl
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

from lab import ROOT
from lab import benchmark as bd

DOC = os.path.join(ROOT, 'docs', 'baselines.md')
PNG_DIR = os.path.join(ROOT, 'docs', 'baselines')
RESULTS = os.path.join(PNG_DIR, 'results.json')
LOCK = '/tmp/puffer-cpu.lock'
SEEDS = (0, 1, 2)
LAST_N = 5  # final score = mean of the metric over the last LAST_N logged rows

OCEAN = ('squared', 'password', 'stochastic', 'memory', 'multiagent', 'spaces', 'bandit')

# env -> (metric, total agent steps, extra flags, compose service). compose.yaml runs the same
# commands (tests/test_baselines.py checks it).
BASELINES = {
    'CartPole-v1': ('env/episode_return', 300_000, [], 'baseline-cartpole-v1'),
    # Ocean sanity suite: 3M steps each, except what needs longer to reach its optimum (docs/training.md):
    # memory (an LSTM) 8M, squared 15M.
    **{f'puffer_{name}': ('env/perf', {'memory': 8_000_000, 'squared': 15_000_000}.get(name, 3_000_000), [],
                          'baseline-ocean-sanity') for name in OCEAN},
    'minihack_room': ('env/episode_return', 50_000, [], 'baseline-minihack-room'),
    'pettingzoo_kaz': ('env/episode_return', 100_000, [], 'baseline-pettingzoo-kaz'),
    # Procgen's committed config (IMPALA ResNet + LSTM) trains at ~220 steps/s on 2 CPU cores: this
    # short budget checks that it trains and reproduces, not a score (the GPU baseline below is that).
    'procgen_bigfish': ('env/episode_return', 16_384, [], 'baseline-procgen-bigfish-cpu'),
    # ViZDoom's basic scenario above a mean return of 75 within 10 minutes (a random policy
    # scores below zero); 100k steps take 4-7 minutes on these 2 cores (250-450 steps/s)
    'vizdoom_basic': ('env/episode_return', 100_000, [], 'baseline-vizdoom-basic'),
    # defend_the_center's curve within a 20-minute budget: 300k steps at basic's 250-450 steps/s
    'vizdoom_defend_the_center': ('env/episode_return', 300_000, [], 'baseline-vizdoom-defend-the-center'),
}

# Baselines that need a GPU machine: commands and services ready, not measured on the CPU machines.
# env -> (metric, steps, flags, service, published reference at that budget)
GPU_BASELINES = {
    'atari_pong': ('env/score', 10_000_000, [], 'baseline-atari-pong', 'near the maximum of 21 (CleanRL PPO curves)'),
    'atari_breakout': ('env/score', 10_000_000, [], 'baseline-atari-breakout',
                       'about 400 at 10M steps (published PPO range)'),
    'procgen_bigfish': ('env/episode_return', 25_000_000, [], 'baseline-procgen-bigfish',
                        'PPO, easy mode, 25M steps: Cobbe et al. 2020, figure 2'),
    'nethack': ('env/episode_return', 100_000_000, [], 'baseline-nethack',
                'NetHackScore baselines: Kuttler et al. 2020 (the NLE paper)'),
}

# The learning acceptance of the second-wave Ocean games and later ones, three seeds each, measured by
# scripts/lab/acceptance_train.py, which records every finished run in ACCEPTANCE_RESULTS (env -> seed ->
# result) and redraws the doc. env -> (target, budget, what was known before the runs, for envs not run yet).
ACCEPTANCE_RESULTS = os.path.join(PNG_DIR, 'acceptance.json')
ACCEPTANCE_ENVS = {
    'puffer_go': ('env/perf >= 0.90 (wins vs the capture-greedy player)', '20 min', ''),
    'puffer_tripletriad': ('env/perf >= 0.80 (wins vs the flip-greedy player)', '10 min', ''),
    'puffer_trash_pickup': ('env/perf >= 0.90 (trash in bins)', '10 min', ''),
    # the scripted policies' scores are measured on the training config at the start of every run
    'puffer_enduro': ('env/score > the scripted driver\'s (cars passed)', '20 min',
                      'a 150 s probe (seed 0, shared machine): 10 cars passed against the scripted 74, rising'),
    'puffer_tetris': ('env/score > the scripted placer\'s (lines)', '20 min',
                      'a 150 s probe: 0.3 lines against the scripted 35'),
    'puffer_rware': ('env/score > the scripted robots\' (deliveries per robot)', '20 min',
                     'a 150 s probe: 0.2 against the scripted 10; episodes are 500 steps, so one logged episode'),
    'puffer_drone': ('env/perf >= 0.90 (targets reached)', '20 min', ''),
    'puffer_rocket_lander': ('env/perf >= 0.90 (episodes landed, Box actions)', '20 min', ''),
    'puffer_freeway': ('env/score > the scripted chicken\'s (crossings)', '20 min', ''),
    'puffer_blastar': ('env/score > the scripted ship\'s (enemies shot down)', '20 min', ''),
    'puffer_pacman': ('env/perf >= 0.50 (maze cleared)', '20 min', ''),
    # third wave: board and sports games
    'puffer_g2048': ('env/perf >= 0.50 (games that reach the 512 tile)', '20 min', ''),
    'puffer_checkers': ('env/perf >= 0.80 (wins vs the one-ply greedy player)', '20 min', ''),
    'puffer_slimevolley': ('env/perf >= 0.70 (points won vs the scripted slime, both sides)', '20 min', ''),
    # the MMO, at its CPU config and with the large config's network
    'puffer_mmo': ('env/episode_length > the scripted forager/fighter\'s on the same 64 worlds (ticks a life), '
                   'checked at the end of the budget', '30 min',
                   'a 5M-step run (scripts/lab/results/mmo.md, 7-9 min): 342 and 402 ticks against the scripted 358'),
    'puffer_mmo_large': ('puffer_mmo with the large config\'s network (1.6M parameters), same worlds and batches: '
                         'env/episode_length > the scripted forager/fighter\'s', '30 min', ''),
    # fourth wave: a flock with Box actions and the arcade Asteroids, a few minutes each
    'puffer_boids': ('env/perf >= 0.5 x the scripted Reynolds rules\' (share of boid steps in a flock)', '10 min',
                     ''),
    'puffer_asteroids': ('env/score >= 0.5 x the scripted gunner\'s (rocks hit)', '10 min', ''),
    # puzzles: Sokoban at one box, against the autopilot's 100% and random moves' 45%
    'puffer_boxoban': ('env/perf >= 0.80 (levels solved, one box; the autopilot solves all)', '10 min', ''),
    'puffer_terraform': ('env/perf >= 0.5 x the scripted greedy dozers\' (share of the height error removed), '
                         'on the 24 x 24 map with one plateau and 256-step episodes', '10 min', ''),
    'puffer_tactical': ('env/perf >= the scripted squad\'s (battles won against the built-in squad)', '10 min', ''),
    'puffer_moba': ('env/score >= 0.5 x the scripted heroes\' (games won against the random team)', '10 min', ''),
    'puffer_tower_climb': ('env/perf >= 0.5 x the autopilot\'s (levels solved, goal on floor 4; it solves all)',
                           '10 min', ''),
}
# What the numbers alone do not say, written under the env's curves (a missed target: what was tried;
# a met one: what it took).
ACCEPTANCE_NOTES = {
    'puffer_terraform': (
        '**Missed: one seed of three met, right at the target; the other two checked 0.002 and 0.015 below it.** '
        'The setting is the config file\'s smaller map (24 x 24, one 11 x 11 plateau, 256-step episodes), where the '
        'greedy dozers remove 0.93-0.95 of the error. At the env\'s defaults (64 x 64, 3,072 steps) a 10-minute run '
        'saw one or two episodes per dozer (perf 0.05 at 3.1M steps). On the small map with the default rewards a '
        '3-minute probe (seed 0) read 0.21 at 3.3M steps; a unit worth 1 and the solve bonus 10 (the same shape, '
        'ten times larger) with a time-limit end valued as the state it cut off took it to 0.40 at 1.6M steps, '
        'where it levelled off as its entropy fell to 0.2-0.6; an entropy bonus of 0.01 kept runs climbing to '
        '0.44-0.46 on their checks (a one-layer network on a 20M-step schedule: 0.463, 0.439 and 0.458, seed 0 '
        'met). The runs shown add a second hidden layer and a 24M-step schedule (about what 10 minutes reach, so '
        'the rate has nearly annealed at the end): 0.464 at 16.8M steps (met), 0.463 and 0.458 at the budget\'s '
        'end, their rows levelling at 0.46-0.475 from about 13M steps. Short probes (seed 0) of other settings did '
        'worse: the view radius 8 read 0.35-0.41 at 3 minutes (these settings 0.43-0.45) as its entropy collapsed '
        '(its end check 0.14), and the learning rate 0.008 with minibatches of 16,384 steps 0.10-0.29 at 2 minutes. '
        'A larger entropy bonus was tried later on a busier machine (11-27k steps/s): 0.03 on a 10M-step '
        'schedule kept the entropy at 1.8-2.2 but checked 0.431, 0.481 (met) and 0.446, further below on two '
        'seeds than the runs shown, so the config stays as it is; 3-minute probes of 0.02 with gae_lambda 0.95 '
        '(0.32) and of a bucket of 10 units (0.33) were behind too. Why the target is tight: the hills hold the '
        'soil the plateau lacks, so dozers that only scoop and never dump on the plateau remove at most half of '
        'the error, and half the greedy dozers\' share (0.463-0.473) asks for nearly all of that or for soil '
        'delivered; the rows levelling at 0.46-0.475 fit policies that scoop well and deliver little. Not tried: '
        'a wider layer (the update is already two thirds of an epoch here) or a block summary finer than 6 x 6 '
        '(a constant of the C header). The runs shown shared the two cores with other jobs (35-36k steps/s).'),
    'puffer_tactical': (
        '**Met, three seeds of three, within a minute of training each.** The scripted rules, commanding our '
        'squad against their mirror image, won 0.47-0.51 of the checks\' battles; the policies that stopped the '
        'runs won 0.53-0.57 after 1.2-1.6M steps, and a 4M-step probe (seed 0, 5.5 minutes) read 0.89 on its '
        'training rows, so the policies go on past the script. The first target, half the scripted rate, was met '
        'at 0.8-0.9M steps on the same three seeds. The runs shared the two cores with other jobs (13-30k '
        'steps/s).'),
    'puffer_tripletriad': (
        '**Met, at the target rather than clearly above it.** What it took: the env\'s own policy class, '
        'which adds per-action (gain, risk) features to the logits (the Default MLP levels off at 0.72-0.75); '
        'two torch threads (this env\'s workers idle, so the network can have both cores); two update '
        'epochs per batch (on seed 0, 0.795 on the rows at 30M steps against 0.767 with one); and a 65M-step '
        'schedule that ends inside the 10 minutes. Each check plays 8,192 games (+-0.009 at 95%), because a '
        'run stops at its first check that passes: with 2,048-game checks an earlier sitting passed three '
        'seeds at 0.800-0.820 that 8,192 fresh games put at 0.796-0.797. The stopping policies of the runs '
        'here, checked again on 8,192 other deals (`episode_means(..., num_envs=1024, seed=777)`), read '
        '0.797 / 0.812 / 0.800. Before: one update epoch and a 90M schedule (179k steps/s) plateaued at '
        '0.79-0.80 on the rows and checked 0.773-0.785 at the end of the 10 minutes (512 games each); '
        'hidden size 256, two layers or learning rate 0.005 did no better at 30M steps (0.744-0.763 over '
        '4,096 games). Exact expectimax against the same player wins 99% (docs/ocean.md), so more is there '
        'to learn.'),
    'puffer_blastar': (
        '**Met, three seeds of three, once each enemy\'s velocity was observed.** The first design observed '
        'each enemy\'s position only: its seed-0 run rose to 44 kills at 100M steps and checked 50.1 after the '
        'full 20 minutes (300M steps), and an LSTM probe (`--rnn.class pufferlib.models:LSTMWrapper`) learned '
        'ten times faster per step but levelled off at 48-52 kills. The waves speed up by 10% each and the '
        'scripted ship leads its aim by the enemy\'s velocity, which positions alone do not show. Each enemy '
        'now also shows its velocity and the x offset at which a shot fired now would meet its row (35 '
        'observations, 27 before); with the same defaults the three seeds pass the scripted ship\'s 72.2 after '
        '96-154M steps.'),
    'puffer_mmo': (
        '**Met, three seeds of three, by 15-21%.** Each run trains its whole 30 minutes (41M agent steps on '
        'one core, about 22.7k a second) and is checked once, at the end, on 64 fresh worlds of 16 agents '
        '(every agent lives at least 8 lives); the scripted forager/fighter plays the same 64 worlds (the '
        'same seed), so each seed has its own target: 463.5 / 464.5 / 456.9 ticks a life against the script\'s 392.9 / '
        '382.4 / 398.8. Seed 1 is the earlier run, which had trained its whole budget; only its final '
        'check was made again this way. Why not stop at the first check that passes, as the other tasks '
        'do: in an earlier round the checks (2,048 lives on 16 worlds) moved by 30-60 ticks from one to '
        'the next, and seed 0 stopped at 421 against the script\'s 407 but read 391 against its 395 on 64 '
        'other worlds; on 64-world checks it stopped at 395 against 390 after 934 s and read 387 against '
        '395 elsewhere. A policy a few percent above the script passes one of many noisy checks early; '
        'after the full budget it is well clear of it. The training rows read far higher than the checks '
        '(400-750: a row averages the lives that ended since the last one, and short lives end first); '
        'only the checks count.'),
    'puffer_mmo_large': (
        "**The large network on these CPUs: 346 agent steps/s, 62x fewer than the small one's 21.5-22.5k**, so "
        "its 30 minutes are 0.62M steps. Over those steps its rows track the small network's (75-77 ticks at 66k "
        'steps, 143-149 at 459k: no faster per step yet), and its policy checked at 207 ticks against the '
        'scripted 407. Whether the bigger network pays off later in a run is a question for a GPU (`puffer train '
        "puffer_mmo --config pufferlib/config/puffer_mmo_large.toml`); on a 2-core CPU the "
        'small config is the one that learns.'),
    'puffer_tetris': (
        '**Missed, with the curves still rising.** The default config clears 29-32 lines per game after 20 '
        'minutes against the scripted placer\'s 35.3, and every curve is still climbing (about a line a '
        'minute at the end) with the learning rate at a quarter of its peak: the 300M-step schedule is at '
        '187-202M steps when the budget ends. Tried on seed 0: two torch threads (tetris\'s workers idle, '
        'so the network can have both cores: about 240k against 205k steps/s) with a 240M-step schedule '
        'that ends inside the 20 minutes; it checked at 20.7 lines (240M steps, 1,071 s), against 30.5 '
        'for the default on the same seed, so that config was dropped. Seed 1 shared 7 of its 20 '
        'minutes with the test suite at `nice -n 19` (187M steps, against 202M for seed 0). The first '
        'probe\'s 0.3 lines in 150 s was the machine under load (10k steps/s).'),
    'puffer_boids': (
        '**Met, three seeds of three, at half the scripted share and not yet near the script.** The Reynolds rules '
        'keep 99.9% of their boids in a flock; the policies checked at 54-65% after 3-7 minutes (random steering: '
        'about 14%). The rows swing by 0.2-0.4 from one episode to the next (every boid of a run ends its '
        'episode on the same step, so a row is one episode of the whole flock), which is why only the checks '
        'count. What it took: probes of 6-7M steps with the first design (the neighbour list alone in the '
        'row, a constant penalty for a boid with nobody in sight, a 0.1 acceleration) stayed at 0.2-0.6 with '
        'flat returns; the row now also holds the centre offset and mean velocity difference of the neighbours '
        'in sight (what the rules score), a boid alone pays for its distance to the nearest, a full action '
        'changes the velocity by 0.3, and the config sets gamma 0.95 and clip 0.1. The runs shared the two '
        'cores with other jobs (59k steps/s).'),
    'puffer_boxoban': (
        '**Met, three seeds of three, at one box.** The autopilot solves every level and random moves 45%; the '
        'policies checked at 82-86% of levels solved (64 envs, whole episodes). Seed 1 got there only at the end of '
        'its 4M-step schedule: its logged rows peaked at 0.788 and the check at the end of the budget read 0.818. '
        'What it took: the observation centred on the player (with the room as fixed planes a probe stayed at '
        'random play\'s rate for 2M steps), and a config with ten times the entropy bonus, bootstrapped '
        'time-limit ends and a 4M-step schedule (with the defaults a probe levelled off at 62%). The runs '
        'shared the two cores with two other trainings (5-9k steps/s).'),
    'puffer_tower_climb': (
        '**Met, three seeds of three, at the default difficulty, within half a minute of training each** (the '
        'goal on floor 4, levels of at least 8 moves; the autopilot solves every level, random moves 0.1%). '
        'Floors 2 and 3 (random moves: 4.2% and 0.8%) were met the same way, in 10-25 s on every seed. What it '
        'took: the observation as two binary planes (solid cells, the goal) and signed goal offsets. With one '
        'plane of cell codes 0-3 and offsets shifted to 0-14, which the default MLP takes unscaled, one seed of '
        'three learned at floor 2 (0.79 in 1.8M steps); the others settled into a cautious policy (no deaths, '
        'half a floor climbed) and ended their 5M-step schedules near 0, and five times the entropy bonus, a '
        '20M-step schedule or a death penalty of -0.25 did not change that. The runs shared the two cores with '
        'other jobs.'),
}
ACCEPTANCE_COMMAND = ('for S in 0 1 2; do flock /tmp/puffer-bench.lock nice -n 5 .venv/bin/python '
                      '-m lab.acceptance_train --only {short} --seed $S; done')
CURVE_POINTS = 400  # points kept per run's curve in ACCEPTANCE_RESULTS


def use_docs(folder):
    """Write the doc, the PNGs and the results files under `folder` instead of docs/."""
    global DOC, PNG_DIR, RESULTS, ACCEPTANCE_RESULTS
    DOC = os.path.join(folder, 'baselines.md')
    PNG_DIR = os.path.join(folder, 'baselines')
    RESULTS = os.path.join(PNG_DIR, 'results.json')
    ACCEPTANCE_RESULTS = os.path.join(PNG_DIR, 'acceptance.json')


def read_results(path):
    """A results file (RESULTS, ACCEPTANCE_RESULTS) as a dict; empty before the first run wrote it."""
    return bd.read_results(path, {})


# A section another script keeps in the page (`## heading`, then its text between <!-- name:start --> and
# <!-- name:end -->, as lab.benchmark.update_section writes it; scripts/lab/bench_magent2.py's), with the
# paragraphs written under it by hand up to the next heading. A name may hold spaces (lab.bench_pbt's
# `bench_pbt ENV`).
KEPT_SECTION = re.compile(r'## [^\n]*\n\n<!-- ([\w -]+?):start -->.*?<!-- \1:end -->\n(?:(?!## )[^\n]*\n)*',
                          re.DOTALL)


def write_doc(results):
    """docs/baselines.md from `results` (RESULTS' contents) and ACCEPTANCE_RESULTS, keeping the sections
    other scripts wrote into it; returns its path."""
    text = render(results) + '\n'
    if os.path.exists(DOC):
        with open(DOC) as f:
            for match in KEPT_SECTION.finditer(f.read()):
                if f'<!-- {match.group(1)}:start -->' not in text:
                    text = text.rstrip('\n') + '\n\n' + match.group(0)
    with open(DOC, 'w') as f:
        f.write(text)
    return DOC


def record_acceptance(result):
    """Keep one acceptance run (scripts/lab/acceptance_train.py) in ACCEPTANCE_RESULTS, redraw its env's
    curves and rewrite the doc; returns the doc's path."""
    runs = read_results(ACCEPTANCE_RESULTS)
    curve = result['curve']
    stride = max(1, -(-len(curve) // CURVE_POINTS))
    # the run directory is scratch space on the machine that ran it: readers of the file cannot open it
    kept = {**{k: v for k, v in result.items() if k != 'run_dir'},
            'curve': curve[::stride] + ([curve[-1]] if curve and (len(curve) - 1) % stride else []),
            'hardware': hardware(), 'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
    runs.setdefault(result['env'], {})[str(result['seed'])] = kept
    bd.write_results(ACCEPTANCE_RESULTS, runs)
    draw_acceptance(result['env'], runs[result['env']])
    return write_doc(read_results(RESULTS))


def draw_acceptance(env, runs):
    """docs/baselines/acceptance_<env>.png: every seed's logged metric against training seconds, the
    checks over whole episodes as dots, the target and the budget."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for seed, r in sorted(runs.items()):
        line, = ax.plot([p[0] for p in r['curve']], [p[2] for p in r['curve']], lw=1, alpha=0.8,
                        label=f'seed {seed}' + ('' if r['solved'] else ' (missed)'))
        ax.plot([c['seconds'] for c in r['checks']], [c['value'] for c in r['checks']], 'o', color=line.get_color())
    ax.plot([], [], 'o', color='grey', label='policy checked over whole episodes')
    any_run = next(iter(runs.values()))
    targets = sorted({round(r['target'], 3) for r in runs.values()})
    for target in targets:
        ax.axhline(target, color='k', ls='--', lw=1)
    longest = max(r['seconds_run'] for r in runs.values())
    if longest > 0.8 * any_run['budget_s']:
        ax.axvline(any_run['budget_s'], color='grey', ls=':', lw=1)
    ax.set_xlim(0, max(longest, 1.0) * 1.05)
    ax.set_xlabel('training seconds (2-core CPU)')
    ax.set_ylabel(any_run['metric'])
    ax.set_title(f'{env}: target {" / ".join(str(t) for t in targets)} (dashed), budget {any_run["budget_s"]} s',
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(PNG_DIR, f'acceptance_{env}.png')
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render_acceptance():
    """The Ocean games' learning-acceptance section of the doc, from ACCEPTANCE_RESULTS."""
    runs = read_results(ACCEPTANCE_RESULTS)
    lines = ['## Ocean games: learning acceptance', '',
             'Default hyperparameters plus the env files in `pufferlib/config/`, seeds 0, 1 and 2, on this 2-core',
             'CPU machine (`scripts/lab/acceptance_train.py`, which writes this section). A run stops when its policy,',
             'checked over whole episodes, reaches the target, or at its wall-clock budget. The logged training',
             'rows only trigger the check: a row averages the episodes that ended since the previous row, and',
             'when every env starts at once the short episodes end first (a trash_pickup episode that ends early',
             'is one where all the trash went in), so early rows over-read. The check plays the saved policy in',
             '64 fresh envs (tripletriad: 1,024, its policies sit at the target) until every agent row has',
             'finished 8 episodes and counts each episode once (`pufferlib.evaluate.episode_means`); when it',
             'falls short, training resumes from that checkpoint.',
             '"Seconds" is training wall-clock time including set-up, the checks excluded.', '',
             '| env | target | budget | met | seconds to target (seeds 0, 1, 2) | agent steps to target '
             '| checked value | agent steps/s | run |', '|---|---|---|---|---|---|---|---:|---|']
    pending = []
    for env, (target, budget, probe) in ACCEPTANCE_ENVS.items():
        done = runs.get(env, {})
        if not done:
            pending.append((env, target, budget, probe))
            continue
        seeds = [done[s] for s in sorted(done)]
        met = sum(r['solved'] for r in seeds)
        seconds = ' / '.join(f'{r["seconds"]:.0f}' if r['solved'] else f'missed ({r["seconds_run"]:.0f} s run)'
                             for r in seeds)
        steps = ' / '.join(f'{r["step"] / 1e6:.1f}M' if r['solved'] else 'missed' for r in seeds)
        checked = ' / '.join(f'{r["value"] if r["solved"] else r["final"]:.3f}' for r in seeds)
        sps = statistics.fmean(r['sps'] for r in seeds)
        dates = sorted({r['date'][:10] for r in seeds})
        if 'scripted' in target:  # the number it had to beat
            target += ': ' + ' / '.join(sorted({f'{r["target"]:.3g}' for r in seeds}))
        lines.append(f'| {env} | {target} | {budget} | {met} of {len(seeds)} | '
                     f'{seconds} | {steps} | {checked} | {sps:,.0f} | {", ".join(dates)} |')
    for env in ACCEPTANCE_ENVS:
        if env in runs:
            cmd = ACCEPTANCE_COMMAND.format(short=env.removeprefix('puffer_'))
            hw = sorted({r['hardware'] for r in runs[env].values()})
            lines += ['', f'### {env}', '', '```', cmd, '```', '', 'Hardware: ' + '; '.join(hw) + '.', '',
                      f'![{env} acceptance curves](baselines/acceptance_{env}.png)']
            if env in ACCEPTANCE_NOTES:
                lines += ['', ACCEPTANCE_NOTES[env]]
    if pending:
        lines += ['', '### Not run yet', '', '| env | target | budget | command | what is known |',
                  '|---|---|---|---|---|']
        for env, target, budget, probe in pending:
            cmd = ACCEPTANCE_COMMAND.format(short=env.removeprefix('puffer_'))
            lines.append(f'| {env} | {target} | {budget} | `{cmd}` | {probe or "-"} |')
    return lines + ['']


def hardware():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open('/proc/cpuinfo'):
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    import torch
    return f'{cpu}, {os.cpu_count()} cores, CPU only, torch {torch.__version__} ({torch.get_num_threads()} threads)'


def command(env, steps, flags, seed, log_interval='0.25'):
    return (['puffer', 'train', env, '--train.total-timesteps', str(steps), '--train.seed', str(seed),
             '--train.log-interval', log_interval] + list(flags))


# The seed as compose.yaml passes it: `BASELINE_SEED=1 docker compose run --rm <service>` picks another.
COMPOSE_SEED = '${BASELINE_SEED:-0}'


def print_commands():
    """One JSON object a line per baseline: env, compose service, step budget and the command its service
    runs (the GPU ones log every 5 s), so compose.yaml can be checked against this file."""
    for env, (_metric, steps, flags, service) in BASELINES.items():
        print(json.dumps({'env': env, 'gpu': False, 'service': service, 'steps': steps,
                          'command': command(env, steps, flags, COMPOSE_SEED)}))
    for env, (_metric, steps, flags, service, _reference) in GPU_BASELINES.items():
        print(json.dumps({'env': env, 'gpu': True, 'service': service, 'steps': steps,
                          'command': command(env, steps, flags, COMPOSE_SEED, log_interval='5')}))


def run_one(env, steps, flags, seed, experiments):
    before = set(os.listdir(experiments)) if os.path.isdir(experiments) else set()
    cmd = command(env, steps, flags, seed)
    cmd[0] = os.path.join(os.path.dirname(sys.executable), 'puffer')
    log = os.path.join(experiments, f'.{env}-seed{seed}.log')
    os.makedirs(experiments, exist_ok=True)
    with open(LOCK, 'a') as lock, open(log, 'w') as out:
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.time()
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT,
                             env={**os.environ, 'PUFFER_EXPERIMENTS': experiments})
        wall = time.time() - start
    new = sorted(d for d in set(os.listdir(experiments)) - before if d.startswith(env + '-'))
    if rc != 0 or not new:
        raise RuntimeError(f'{" ".join(cmd)} failed (rc {rc}); see {log}')
    return os.path.join(experiments, new[-1]), wall


def score(run_dir, metric):
    """(score at the start, final score, steps): means of the first and last LAST_N logged values."""
    from pufferlib.evaluate import read_metrics
    rows = read_metrics(run_dir)
    values = [r[metric] for r in rows if metric in r]
    nan = float('nan')
    return (statistics.fmean(values[:LAST_N]) if values else nan, statistics.fmean(values[-LAST_N:]) if values else nan,
            rows[-1]['global_step'] if rows else 0)


def run_env(env, experiments):
    metric, steps, flags, service = BASELINES[env]
    runs = []
    for i, seed in enumerate(SEEDS + (SEEDS[0],)):
        run_dir, wall = run_one(env, steps, flags, seed, experiments)
        start, final, global_step = score(run_dir, metric)
        runs.append({'seed': seed, 'repeat': i >= len(SEEDS), 'run_dir': run_dir, 'wall_s': wall,
                     'steps': global_step, 'start': start, 'final': final})
        print(f'{env:<20} seed {seed}{" (repeat)" if i >= len(SEEDS) else ""}: {metric} {final:.3f} '
              f'after {global_step:,} steps in {wall:.0f} s', flush=True)
    result = {'env': env, 'metric': metric, 'budget': steps, 'flags': flags, 'service': service,
              'command': ' '.join(command(env, steps, flags, 'S')), 'hardware': hardware(),
              'date': time.strftime('%Y-%m-%d'), 'runs': runs}
    result['png'] = draw(result, experiments)
    return result


def draw(result, experiments):
    """The learning-curve PNG; the legend names runs by seed (symlinks named seed0, seed1, ...)."""
    from pufferlib.evaluate import plot
    env = result['env']
    labels = os.path.join(experiments, '.labels', env)
    os.makedirs(labels, exist_ok=True)
    paths = []
    for r in result['runs']:
        link = os.path.join(labels, f'seed{r["seed"]}' + ('-rerun' if r['repeat'] else ''))
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(r['run_dir'], link)
        paths.append(link)
    os.makedirs(PNG_DIR, exist_ok=True)
    png = plot(paths, metric=result['metric'], out=os.path.join(PNG_DIR, f'{env}.png'),
               title=f'{env}: seeds 0, 1, 2 and seed 0 rerun')
    return os.path.relpath(png, os.path.dirname(DOC))


def fmt(x):
    return f'{x:.3f}' if abs(x) < 10 else f'{x:.1f}'


def render(results):
    hw = sorted({r['hardware'] for r in results.values()})
    lines = ['# Baselines', '',
             'Reproducible baselines on a 2-core CPU machine (no GPU). Every row is `puffer train` with the',
             'committed config (`pufferlib/config/default.toml` -> family file -> env file) plus the flags shown,',
             'for seeds 0, 1 and 2, then seed 0 once more to measure run-to-run noise on the same hardware.',
             f'Final score = mean of the metric over the last {LAST_N} logged rows (one row every 0.25 s).',
             'Budgets are short (a minute or two per run): these are reproducibility baselines, not tuned',
             'results. Regenerate with `.venv/bin/python -m lab.baselines [--only ENV]`.', '',
             'Hardware: ' + '; '.join(hw) + '.', '',
             'Compose: each row names the service of `compose.yaml` that runs the same command;',
             '`BASELINE_SEED=1 docker compose run --rm baseline-cartpole-v1` reproduces seed 1 of CartPole-v1',
             '(add `-f compose.cpu.yaml` on a machine without a GPU).', '',
             '"At start" is the mean over the first logged rows of the same runs: what the untrained policy '
             'scores.', '',
             '| env | metric | steps | seeds | wall time / run (s) | at start | final score (mean ± std, seeds 0-2) '
             '| per seed | seed-0 rerun (noise) | compose service |',
             '|---|---|---:|---|---:|---:|---:|---|---:|---|']
    for env in BASELINES:
        r = results.get(env)
        if not r:
            continue
        main = [x for x in r['runs'] if not x['repeat']]
        rep = [x for x in r['runs'] if x['repeat']]
        finals = [x['final'] for x in main]
        std = statistics.stdev(finals) if len(finals) > 1 else 0.0
        wall = statistics.fmean(x['wall_s'] for x in r['runs'])
        noise = f'{fmt(rep[0]["final"])} (Δ {fmt(rep[0]["final"] - main[0]["final"])})' if rep else 'n/a'
        starts = [x['start'] for x in main if 'start' in x]
        start = fmt(statistics.fmean(starts)) if starts else 'n/a'
        lines.append(f'| {env} | {r["metric"]} | {main[0]["steps"]:,} | {", ".join(str(x["seed"]) for x in main)} | '
                     f'{wall:.0f} | {start} | {fmt(statistics.fmean(finals))} ± {fmt(std)} | '
                     f'{" / ".join(fmt(f) for f in finals)} | {noise} | {BASELINES[env][3]} |')
    lines += ['', 'Notes: procgen_bigfish trains at ~220 steps/s on these 2 cores (IMPALA ResNet + LSTM, the',
              'committed config), so its 16k-step budget checks that the config trains and reproduces; it is',
              'far from a score. A Nature CNN without recurrence (~2,400 steps/s) showed no learning on',
              'starpilot within 150k steps either, so the Procgen score is left to the GPU baseline below.',
              'vizdoom_defend_the_center pays +1 a kill and -1 for dying (the episode ends there or after',
              '2,100 tics); its 300k steps take 12-14 minutes at about 390 steps/s, inside its 20-minute budget.',
              'The curves rise from about 0 (a fresh policy turning at random) to 3-6 kills a',
              'life, still rising at the end; the seed-0 rerun ended at 2.5 against the first run\'s 5.6, so',
              'one run says little at this length (the family config trains 2M steps).',
              '']
    lines += ['## GPU baselines (full runs not run yet)', '',
              'The GPU check (`scripts/lab/gpu_check.sh`, docs/gpu.md) measures times to solve and one-minute Atari',
              'curves on a GPU: its latest figures are the section "On a GPU: time to solve" at the end of this',
              'page, with the machine named. The full runs below take hours of a GPU and have not run yet; the',
              'commands and compose services are ready, and the reference column is what a run should land near.',
              '',
              '| env | metric | steps | command | compose service | published reference |',
              '|---|---|---:|---|---|---|']
    for env, (metric, steps, flags, service, reference) in GPU_BASELINES.items():
        cmd = ' '.join(command(env, steps, flags, '$S', log_interval='5'))
        lines.append(f'| {env} | {metric} | {steps:,} | `{cmd}` | {service} | {reference} |')
    lines += [''] + render_acceptance()
    lines += ['## Commands and curves', '']
    for env in BASELINES:
        r = results.get(env)
        if not r:
            continue
        cmd = r['command'].replace('--train.seed S', '--train.seed $S')
        runs = ', '.join(f'seed {x["seed"]}{" (rerun)" if x["repeat"] else ""}: {x["steps"]:,} steps, '
                         f'{x["wall_s"]:.0f} s' for x in r['runs'])
        loop = f'for S in 0 1 2 0; do PUFFER_EXPERIMENTS=/tmp/baselines {cmd}; done'
        lines += [f'### {env}', '', '```', loop, '```', '',
                  f'Run {r["date"]}; {runs}.',
                  '', f'![{env} learning curves]({r["png"]})', '']
    missing = [e for e in BASELINES if e not in results]
    if missing:
        lines += ['## Not run yet', '', ', '.join(missing) + ': `python -m lab.baselines --only ENV` adds them.', '']
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--only', nargs='*', help='env names (or suffixes: cartpole, memory, kaz, ...)')
    parser.add_argument('--experiments', default=os.environ.get('PUFFER_EXPERIMENTS', '/tmp/baselines'))
    parser.add_argument('--replot', action='store_true',
                        help='no training: redraw PNGs and the doc from the results files')
    parser.add_argument('--record-acceptance', metavar='FILE',
                        help='no training: keep the acceptance runs in FILE (written by python -m '
                             'lab.acceptance_train --results), redraw their curves and rewrite the doc')
    parser.add_argument('--print-commands', action='store_true',
                        help='no training: print every baseline\'s command as its compose service runs it (JSON lines)')
    parser.add_argument('--docs', metavar='DIR', help='write baselines.md and baselines/ under DIR (default: docs/)')
    args = parser.parse_args()
    if args.print_commands:
        print_commands()
        return 0
    if args.docs:
        use_docs(args.docs)
    if args.record_acceptance:
        with open(args.record_acceptance) as f:
            runs = json.load(f)
        if not isinstance(runs, list) or not runs:
            parser.error(f'{args.record_acceptance} holds no list of runs (python -m lab.acceptance_train --results)')
        for result in runs:  # in order: a later run of the same env and seed replaces an earlier one
            path = record_acceptance(result)
        print(f'wrote {path}')
        return 0
    envs = list(BASELINES)
    if args.only:
        envs = [e for e in envs if any(e == o or e.lower().endswith(o.lower()) for o in args.only)]
        if not envs:
            parser.error(f'no baseline matches {args.only}; baselines: {", ".join(BASELINES)}')
    results = read_results(RESULTS)
    if args.replot:  # redraw the PNGs and the doc from results.json (the run directories must still exist)
        for env in envs:
            if env in results:
                for r in results[env]['runs']:
                    if os.path.isdir(r['run_dir']):
                        r['start'] = score(r['run_dir'], results[env]['metric'])[0]
                results[env]['png'] = draw(results[env], args.experiments)
        accepted = read_results(ACCEPTANCE_RESULTS)
        for env, runs in accepted.items():  # drawn from the curves kept in the file
            draw_acceptance(env, runs)
        write_doc(results)
        return 0
    failed = []
    for env in envs:
        try:
            results[env] = run_env(env, args.experiments)
        except Exception as e:  # keep going: one broken env should not lose the others
            print(f'{env}: FAILED: {e}', flush=True)
            failed.append(env)
            continue
        bd.write_results(RESULTS, results)
        write_doc(results)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(bd.run_main(main))
