"""The `puffer` command line: `puffer <command> ...`; `puffer --help` lists the commands."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeAlias

import pufferlib
from pufferlib import invocation, registry, rundir

# What build_parser's add_subparsers() returns: its add_parser() makes parsers of the class of the parser
# it hangs from, a Parser (below).
Commands: TypeAlias = 'argparse._SubParsersAction[Parser]'


class Experiments(Protocol):
    """What `puffer sweep`, `puffer league` and `puffer pbt` call of their package (pufferlib.sweep, ...)."""

    def create(self, env_name: str, flags: Sequence[str] = (), config_file: str | None = None,
               root: str | None = None) -> str: ...

    def report(self, path: str) -> list[str]: ...


def _add_experiment_parser(commands: Commands, name: str, func: Callable[[argparse.Namespace, list[str]], int],
                           epilog: str, *, help: str, env_help: str, folder: str, where: str, report: str,
                           quiet: str) -> None:
    """`puffer sweep` and `puffer league` take the same arguments: both make, resume and report an
    experiment directory of many runs."""
    parser = commands.add_parser(name, help=help, add_help=False, epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('env', nargs='?', help=env_help)
    parser.add_argument('--config', help=f'a TOML file layered over the env\'s defaults (its [{name}] too)')
    parser.add_argument('--resume', metavar=folder, help=f'continue {where}')
    parser.add_argument('--report', metavar=folder, help=report)
    parser.add_argument('--quiet', action='store_true', help=quiet)
    parser.add_argument('-h', '--help', action='store_true', help='show this help')
    parser.set_defaults(func=func, takes_flags=True, parser=parser)


def _add_env_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('env', help='environment name: puffer_<name> (Ocean) or a Gymnasium id; '
                                    'see `puffer envs`')


def cmd_envs(args: argparse.Namespace) -> None:
    """One row per name: the name, its family, and whether it runs here (else what to install)."""
    names = [n for n in pufferlib.env_names() if args.filter is None or args.filter.lower() in n.lower()]
    rows = []
    for name in names:
        absent = registry.missing(name)
        if absent is None or not args.runnable:
            # The reason starts with the name; the row has it already.
            rows.append((name, registry.family_of(name) or '', 'yes' if absent is None else
                         'no: ' + absent.removeprefix(name).lstrip(' :')))
    if not rows:
        return
    width = max(len(name) for name, _, _ in rows)
    family_width = max(len(family) for _, family, _ in rows)
    for name, family, runs in rows:
        print(f'{name:<{width}}  {family:<{family_width}}  {runs}')


def cmd_autotune(args: argparse.Namespace) -> None:
    from pufferlib import vector
    pufferlib.make(args.env).close()  # an unknown name fails here, with suggestions, before any timing
    print(f'autotune {args.env}: {vector.cpu_count()} cores, {args.seconds:g} s per setting')
    best, sps = vector.autotune(args.env, max_envs=args.max_envs, seconds=args.seconds)
    kwargs = ', '.join(f'{k}={v!r}' for k, v in best.items())
    print(f'\nuse: pufferlib.vector.make({args.env!r}, {kwargs})')


TRAIN_EPILOG = """Every config key is a flag: --train.learning-rate 0.01, --vec.num-envs 8, --env.KEY VALUE,
--policy.hidden-size 256. `puffer train ENV --help` lists all of them with the values for ENV.
Environments: puffer_<name> (Ocean: see `puffer envs puffer_`), third-party bindings and every
Gymnasium id (`puffer envs` lists them all)."""


def _config_help(env: str) -> str:
    from pufferlib import config as configuration
    try:
        config = configuration.load(env)
    except pufferlib.PufferError as exc:
        return f'(cannot show the options of {env}: {exc})'
    env_options = {}
    for option in registry.lookup(env).option_specs().values():
        rng = '' if option.kind == 'bool' else f' in [{option.min.describe()}, {option.max.describe()}]'
        env_options[option.name] = (f'{option.kind}{rng}', option.help)
    return (f'options for {env} (defaults, then its family and env config files):\n'
            + configuration.flag_help(config, env_options))


def cmd_train(args: argparse.Namespace, flags: list[str]) -> int:
    from pufferlib import config as configuration
    if args.help:
        args.parser.print_help()
        if args.env:
            print('\n' + _config_help(args.env))
        return 0
    if args.env is None and not args.resume:
        raise pufferlib.APIUsageError('puffer train needs an environment name (or --resume latest|RUN); '
                                      'see `puffer envs`')
    if args.profile:
        flags = [*flags, '--train.profile', 'true']
    config = None
    if args.resume:
        rundir.find_run(args.resume, args.env)  # a missing run fails here, before torch loads
    else:
        # Unknown names, keys, types and env options fail here, with suggestions, before any set-up.
        config = configuration.load(args.env, flags, config_file=args.config)
    from pufferlib import train  # validates the run (train.check_memory) once, before it builds the env
    summary = train.train(args.env, config=config, flags=flags if args.resume else (), resume=args.resume,
                          quiet=args.quiet)
    if summary.get('finished'):  # train() said so, and that the run directory was left as it was
        return 0
    stopped_by = summary.get('interrupted')
    if stopped_by in train.STOP_SIGNALS:
        what = 'Ctrl-C' if stopped_by == 'SIGINT' else stopped_by
        print(f'puffer train: stopped by {what} after {summary["global_step"]:,} steps ({summary["epoch"]} epochs); '
              f'checkpoint {summary.get("checkpoint")}\n'
              f'resume with: {invocation.command("train", "--resume", Path(summary["run_dir"]))}',
              file=sys.stderr)
        return train.STOP_SIGNALS[stopped_by]
    print(f'done: {summary["global_step"]:,} steps in {summary["epoch"]} epochs; run directory '
          f'{summary["run_dir"]}; checkpoint {summary.get("checkpoint")}')
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from pufferlib import evaluate
    result = evaluate.evaluate(args.env, args.checkpoint, episodes=args.episodes, video=args.video,
                               fps=args.fps, seed=args.seed, max_steps=args.max_steps, deterministic=args.argmax,
                               native=args.native)
    returns = ', '.join(f'{value:.3f}' for value in result['returns'][:20])
    more = ', ...' if len(result['returns']) > 20 else ''
    print(f'{args.env}: mean episode return {result["mean_return"]:.3f} over {result["episodes"]} episodes'
          + (f' ({returns}{more})' if returns else '') + (f'; video {result["video"]}' if result.get('video') else ''))
    stats = {key: value for key, value in result['stats'].items() if key != 'episode_return'}
    if stats:  # what else the env logs of an episode: its score, perf (0..1, 1 solved), length, ...
        print('  ' + ', '.join(f'{key} {value:.4g}' for key, value in stats.items()))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pufferlib import export
    for path in export.export(args.env, args.checkpoint, format=args.format, out=args.out):
        print(f'wrote {path}')
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from pufferlib import evaluate
    path = evaluate.plot(args.runs, metric=args.metric, out=args.out)
    print(f'wrote {path}')
    return 0


def _ocean_options(command: str, env: str, pairs: Sequence[str] | None, flags: Sequence[str]) -> dict[str, Any]:
    """An Ocean env's keyword arguments from `--env.KEY VALUE` flags, read as `puffer train` reads them (each
    value as its option's type; the env checks names, types and ranges), and from the older KEY=VALUE
    form, which docs and scripts still use."""
    from pufferlib import config as configuration
    from pufferlib import ocean
    defaults = ocean.spec_of(env).defaults() if env != 'all' else {}
    pairs, env_flags = list(pairs or []), []
    rest = list(flags)
    while rest:  # config flags (with their values) as split_config_flags left them, then what argparse left
        arg = rest.pop(0)
        if arg.startswith('--') and '.' in arg.partition('=')[0]:
            env_flags += [arg] if '=' in arg or not rest else [arg, rest.pop(0)]
        elif '=' in arg and not arg.startswith('-'):
            pairs.append(arg)  # KEY=VALUE after the command's own flags, where argparse does not look
        else:
            raise pufferlib.APIUsageError(f'puffer {command} takes env options (--env.KEY VALUE, e.g. --env.width 32) '
                                          f'and its own flags (see puffer {command} --help), not {arg}')
    other = [flag for flag in env_flags if flag.startswith('--') and not flag.replace('_', '-').startswith('--env.')]
    if other:
        raise pufferlib.APIUsageError(f'puffer {command} takes env options (--env.KEY VALUE, e.g. --env.width 32) '
                                      f'and its own flags (see puffer {command} --help), not {other[0]}')
    options = {}
    for pair in pairs:
        if '=' not in pair:
            raise pufferlib.APIUsageError(f'options are KEY=VALUE or --env.KEY VALUE, got {pair!r}')
        key, value = pair.split('=', 1)
        key = key.replace('-', '_')
        options[key] = configuration.parse_value(value, defaults.get(key))
    if env_flags:
        given = configuration.parse_flags(env_flags, {'env': dict(defaults)})['env']
        options.update((key, value) for key, value in given.items()
                       if key not in defaults or type(value) is not type(defaults[key]) or value != defaults[key])
    return options


def cmd_bench(args: argparse.Namespace, flags: list[str]) -> None:
    from pufferlib import ocean
    from pufferlib.ocean import tools
    names = ocean.env_names() if args.env == 'all' else [args.env]
    options = _ocean_options('bench', args.env, args.options, flags)
    num_envs = options.pop('num_envs', None)
    if num_envs is not None and args.num_envs is not None and num_envs != args.num_envs:
        raise pufferlib.APIUsageError(f'--env.num-envs {num_envs} and --num-envs {args.num_envs} disagree; give one')
    num_envs = args.num_envs if num_envs is None else num_envs
    for name in names:
        ocean.env_class(name)  # unknown names fail before any timing
        sps = tools.bench(name, seconds=args.seconds, num_envs=num_envs, **options)
        print(f'{name:<20} {sps / 1e6:8.2f} M steps/s  (1 core, random actions)')


def cmd_play(args: argparse.Namespace, flags: list[str]) -> None:
    from pufferlib.ocean import tools
    options = _ocean_options('play', args.env, args.options, flags)
    if 'num_envs' in options:
        raise pufferlib.APIUsageError('puffer play shows one env instance; leave out --env.num-envs')
    tools.play(args.env, steps=args.steps, fps=args.fps, seed=args.seed, scripted=args.scripted or False, **options)


def cmd_web(args: argparse.Namespace, flags: list[str]) -> int:
    from pufferlib import web
    if (args.env is None) == (not args.all):
        raise pufferlib.APIUsageError('puffer web builds one env\'s page (puffer web ENV) or the gallery of every '
                                      'Ocean env (puffer web --all): give one of them')
    if args.all:
        if args.checkpoint or flags:
            raise pufferlib.APIUsageError('puffer web --all plays each env\'s latest run, with its own options: '
                                          'leave out --checkpoint and --env.KEY flags')
        path = web.build_gallery(args.out or 'web')
    else:
        args.env = web.ocean_name(args.env)
        options = _ocean_options('web', args.env, [], flags)
        if 'num_envs' in options:
            raise pufferlib.APIUsageError('a page shows one env instance; leave out --env.num-envs')
        path = web.build_page(args.env, args.out, checkpoint=args.checkpoint, options=options)
        print(f'wrote {path}')
    if args.serve is None:
        print(f'open it through a server (puffer web ... --serve) or as a file: {path}')
        return 0
    import os
    import signal
    httpd = web.server(os.path.dirname(path), args.serve)
    print(f'serving http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)', flush=True)

    def stop(signum: int, frame: object) -> None:  # `docker stop`: a container's first process gets SIGTERM
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


def _at_least(kind: Callable[[str], Any], low: float, high: float | None = None) -> Callable[[str], Any]:
    """An argparse type: `kind` of the text, in [low, high]; outside (NaN too) it is argparse's one-line error
    rather than a traceback from deep inside (a port of 99999) or a command that silently does nothing."""
    def parse(text: str) -> Any:
        value = kind(text)  # a ValueError here is argparse's "invalid int value"
        if not value >= low or (high is not None and not value <= high):
            bound = f'between {low} and {high}' if high is not None else f'at least {low}'
            raise argparse.ArgumentTypeError(f'{text} is not {bound}')
        return value
    parse.__name__ = kind.__name__  # what argparse names in its message
    return parse


def _add_ocean_commands(commands: Commands) -> None:
    bench = commands.add_parser('bench', help='steps per second of an Ocean env on one core (random actions)',
                                epilog='Env options as in `puffer train`: --env.KEY VALUE, e.g. --env.width 32 '
                                       '(`puffer train ENV --help` lists them).')
    bench.add_argument('env', help='puffer_<name>, or "all" for every Ocean env')
    bench.add_argument('options', nargs='*', metavar='KEY=VALUE', help='env options in the older form, e.g. width=32')
    bench.add_argument('--seconds', type=_at_least(float, 0.01), default=2.0, help='timing length per env (default 2)')
    bench.add_argument('--num-envs', type=_at_least(int, 1), default=None,
                       help='env instances in the vector (default: about 4096 agent rows)')
    bench.set_defaults(func=cmd_bench, takes_flags=True)

    play = commands.add_parser('play', help='watch a random or scripted agent play an Ocean env in the terminal',
                               epilog='Env options as in `puffer train`: --env.KEY VALUE, e.g. --env.width 15 '
                                      '(`puffer train ENV --help` lists them).')
    play.add_argument('env', help='puffer_<name>')
    play.add_argument('options', nargs='*', metavar='KEY=VALUE', help='env options in the older form, e.g. width=15')
    play.add_argument('--steps', type=_at_least(int, 1), default=200)
    play.add_argument('--fps', type=_at_least(float, 0), default=15.0,
                      help='frames per second (0: as fast as possible)')
    play.add_argument('--seed', type=int, default=0)
    play.add_argument('--scripted', nargs='?', const=True, default=None, metavar='NAME',
                      help="use the env's scripted agent (or the one named) instead of a random one")
    play.set_defaults(func=cmd_play, takes_flags=True)

    web = commands.add_parser('web', help='an Ocean env and its agent as a web page (WebAssembly), or a gallery '
                                          'of every env', epilog='Env options as in `puffer train`: --env.KEY VALUE. '
                                                                 'docs/web.md says how to embed a page.')
    web.add_argument('env', nargs='?', help='puffer_<name>')
    web.add_argument('--all', action='store_true', help='a gallery: every Ocean env, each with your latest run of '
                                                        'it (else the scripted or random player), and an index')
    web.add_argument('--checkpoint', default=None, help='the agent: a checkpoint file, a run directory or `latest` '
                                                        '(default: the env\'s scripted player, else random)')
    web.add_argument('--out', default=None, help='folder to write (default: web/<name>, or web/ with --all)')
    web.add_argument('--serve', nargs='?', type=_at_least(int, 0, 65535), const=8000, default=None, metavar='PORT',
                     help='then serve the folder on 127.0.0.1 (default port 8000; 0: a free one)')
    web.set_defaults(func=cmd_web, takes_flags=True)


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (the usage is one `--help` away), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f'{self.prog}: error: {message} (see {self.prog} --help)\n')


SWEEP_EPILOG = """Settings (also the [sweep] section of a config file; docs/sweeps.md):
  --sweep.method protein|random|pareto_genetic|optuna   --sweep.max-trials N   --sweep.max-hours H
  --sweep.parallel K   --sweep.backend local|ray   --sweep.metric KEY   --sweep.goal maximize|minimize
  --sweep.cost seconds|steps   --sweep.trial-timeout S   --sweep.only train.learning_rate,...
  --sweep.confirm-top K   --sweep.confirm-seeds S   (rerun the K best trials on S more seeds at the end)
Any other flag (--train.total-timesteps 5000000, --env.KEY VALUE) sets the config every trial starts from."""


def _directory(args: argparse.Namespace, flags: list[str], module: Experiments,
               noun: str) -> tuple[str, Sequence[str]] | None:
    """`puffer sweep` and `puffer league`: --help, --report DIR (returns None), else (path, flags): the
    directory to run (--resume DIR, or a new one for ENV) and the flags a resumed one may change."""
    if args.help:
        args.parser.print_help()
        return None
    if args.report:
        for path in module.report(args.report):
            print(f'wrote {path}')
        return None
    if args.resume:
        # argparse takes the value of a trailing flag (--league.iterations 30) for ENV: give it back
        return args.resume, [*flags, args.env] if args.env is not None else flags
    if args.env is None:
        raise pufferlib.APIUsageError(f'puffer {noun} needs an environment name, --resume {noun.upper()} or '
                                      f'--report {noun.upper()}')
    pufferlib.make(args.env).close()  # an unknown name fails here, with suggestions
    path = module.create(args.env, flags, config_file=args.config)
    print(f'{noun} directory {path}')
    return path, ()


def cmd_sweep(args: argparse.Namespace, flags: list[str]) -> int:
    from pufferlib import sweep
    opened = _directory(args, flags, sweep, 'sweep')
    if opened is None:
        return 0
    path, run_flags = opened
    summary = sweep.run(path, run_flags, quiet=args.quiet)
    best = summary['best']
    killed = summary.get('killed', 0)
    if killed:  # stopped from outside (the OOM killer): they say nothing of their config
        print(f'{killed} trial(s) were killed from outside; they rerun on: '
              f'{invocation.command("sweep", "--resume", Path(path))}', file=sys.stderr)
    print(f'done: {summary["trials"]} trials ({summary["failed"]} failed) in {path}' +
          (f'; best: trial {best["trial"]}, score {best["score"]:.4g}'
           + (f' ({best["seeds"]})' if best['seeds'] else '') + '\n  '
           + invocation.command('train', summary['env'], '--config', Path(summary['best_toml']))
           if best else '; no trial succeeded'))
    return 0


LEAGUE_EPILOG = """Settings (also the [league] section of a config file; docs/league.md):
  --league.method self_play|fsp|psro   --league.iterations N   --league.steps-per-iteration STEPS
  --league.meta-solver nash|fictitious_play|alpharank|uniform   --league.fsp-sampling uniform|prioritized
  --league.num-envs GAMES   --league.eval-games N   --league.learner-seat -1|0|1   --league.seed S
  --league.response-rounds N (psro on poker: rounds while a response does not beat the meta-strategy)
  --league.response-init fresh|features (psro: a response starts new, or from the latest one's features)
  --league.backend local|ray (responses and matches as Ray tasks)   --league.ray-address HOST:PORT
  --league.ray-cpus N (a local Ray's CPUs); a resumed league may change these and --league.iterations only
Any other flag (--train.learning-rate 0.01, --env.KEY VALUE) sets the config every response trains with."""


def cmd_league(args: argparse.Namespace, flags: list[str]) -> int:
    from pufferlib import league
    opened = _directory(args, flags, league, 'league')
    if opened is None:
        return 0
    path, run_flags = opened
    summary = league.League(path, run_flags).run(printer=None if args.quiet else print)
    print(f'done: {summary["iterations"]} policies in {path}\n{summary["leaderboard"]}')
    return 0


PBT_EPILOG = """Settings (also the [pbt] section of a config file; docs/pbt.md):
  --pbt.population N   --pbt.interval STEPS (per member per round)   --pbt.fraction F (bottom copies top)
  --pbt.resample P (a copied key drawn afresh instead of x0.8 / x1.2)   --pbt.metric env/KEY
  --pbt.goal maximize|minimize   --pbt.parallel K   --pbt.backend local|ray   --pbt.seed S
  --pbt.seed-from SWEEP (the first members are the best trials of a finished sweep)
The keys perturbed and their ranges are the [sweep] tables (--sweep.only narrows them). Any other flag
(--train.total-timesteps 20000000, --env.KEY VALUE) sets the config every member starts from; a resumed
population may change --pbt.parallel and --pbt.backend only."""


def cmd_pbt(args: argparse.Namespace, flags: list[str]) -> int:
    from pufferlib import pbt
    opened = _directory(args, flags, pbt, 'pbt')
    if opened is None:
        return 0
    path, run_flags = opened
    summary = pbt.run(path, run_flags, quiet=args.quiet)
    best = summary['best']
    if best is None:
        print(f'done: {summary["rounds"]} rounds in {path}; no member scored in the last round')
        return 0
    values = ', '.join(f'{name} = {value!r}' for name, value in summary['values'].items())
    print(f'done: {summary["rounds"]} rounds in {path}; best: member {best}, score {summary["score"]:.4g} '
          f'({values})\n  {invocation.command("eval", summary["env"], "--checkpoint", Path(summary["best_dir"]))}')
    return 0


def build_parser() -> Parser:
    parser = Parser(prog='puffer', description='pufferlib: fast reinforcement learning')
    parser.add_argument('--version', action='version', version=f'pufferlib {pufferlib.__version__}')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND')

    envs = commands.add_parser('envs', help='list every environment name `puffer` accepts, its family and '
                                            'whether it runs here (else what to install)')
    envs.add_argument('filter', nargs='?', help='show only names containing this text')
    envs.add_argument('--runnable', action='store_true', help='show only the envs that run on this install')
    envs.set_defaults(func=cmd_envs)

    autotune = commands.add_parser('autotune',
                                   help='find the fastest vectorization settings for an env on this machine')
    _add_env_argument(autotune)
    autotune.add_argument('--max-envs', type=_at_least(int, 1), default=None,
                          help='largest num_envs to try (default 16 x cores)')
    autotune.add_argument('--seconds', type=_at_least(float, 0.01), default=1.0,
                          help='measuring time per setting (default 1)')
    autotune.set_defaults(func=cmd_autotune)

    train = commands.add_parser('train', help='train an agent with PPO (the main job)', add_help=False,
                                epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument('env', nargs='?', help='environment name (see `puffer envs`)')
    train.add_argument('--config', help='a TOML file layered over the env\'s defaults')
    train.add_argument('--resume', help='continue a run: latest, a run id, or a run directory')
    train.add_argument('--quiet', action='store_true', help='no dashboard or log lines')
    train.add_argument('--profile', action='store_true',
                       help='time each phase of an epoch (env, copy, forward, backward, ...): a table at the end '
                            'and profile.json in the run directory; same as --train.profile true')
    train.add_argument('-h', '--help', action='store_true', help='show this help and every config flag')
    train.set_defaults(func=cmd_train, takes_flags=True, parser=train)

    _add_experiment_parser(commands, 'sweep', cmd_sweep, SWEEP_EPILOG,
                           help='search hyperparameters (Protein, random, Pareto genetic, Optuna)',
                           env_help='environment name (see `puffer envs`)',
                           folder='SWEEP', where='a sweep directory (experiments/sweeps/...)',
                           report='print the trial table of a sweep and write its PNGs',
                           quiet='no progress line or per-trial lines')
    _add_experiment_parser(commands, 'league', cmd_league, LEAGUE_EPILOG,
                           help='population play: self-play, fictitious self-play or PSRO',
                           env_help='a two-seat environment (puffer_kuhn, puffer_leduc, puffer_connect4)',
                           folder='LEAGUE', where='a league directory (experiments/leagues/...)',
                           report='print the leaderboard of a league and write its PNGs',
                           quiet='no per-iteration lines')

    _add_experiment_parser(commands, 'pbt', cmd_pbt, PBT_EPILOG,
                           help='population-based training: members that copy the best and perturb its settings',
                           env_help='environment name (see `puffer envs`)',
                           folder='POPULATION', where='a population directory (experiments/pbt/...)',
                           report="print each member's scores and values and write pbt.png",
                           quiet='no per-member lines')

    evaluate = commands.add_parser('eval', help='play a trained policy, report its return, write a video')
    _add_env_argument(evaluate)
    evaluate.add_argument('--checkpoint', required=True,
                          help='a checkpoint file, a run directory, its checkpoints folder, a run id, or '
                               '`latest` (the run of ENV written to most recently)')
    evaluate.add_argument('--episodes', type=int, default=3, help='episodes to play (default 3)')
    evaluate.add_argument('--video', help='write the frames to this .gif or .mp4 file')
    evaluate.add_argument('--fps', type=int, default=30)
    evaluate.add_argument('--seed', type=int, default=0,
                          help='seeds the env and the sampling of actions: one seed, one set of returns (default 0)')
    evaluate.add_argument('--max-steps', type=int, default=100_000, help='give up after this many steps')
    evaluate.add_argument('--native', action='store_true',
                          help='act through the C inference header (ocean/puffernet.h) instead of torch')
    evaluate.add_argument('--argmax', action='store_true',
                          help='play the most likely action instead of sampling (every head; the mean for Box actions)')
    evaluate.set_defaults(func=cmd_eval)

    export = commands.add_parser('export', help='write a trained policy as ONNX and as native weights for C '
                                                '(ocean/puffernet.h)')
    _add_env_argument(export)
    export.add_argument('--checkpoint', required=True,
                        help='a checkpoint file, a run directory, or `latest` (as for puffer eval)')
    export.add_argument('--format', choices=('onnx', 'native', 'all'), default='all',
                        help='policy.onnx, policy.json + policy.bin (native), or both (default)')
    export.add_argument('--out', default=None, help='folder to write (default: RUN/export)')
    export.set_defaults(func=cmd_export)

    plot = commands.add_parser('plot', help='learning curves (PNG) from runs\' metrics.jsonl')
    plot.add_argument('runs', nargs='+', help='run directories (or metrics.jsonl files)')
    plot.add_argument('--metric', default='env/episode_return', help='metric to plot (default env/episode_return)')
    plot.add_argument('--out', default=None, help='PNG path (default: <first run>/curve.png)')
    plot.set_defaults(func=cmd_plot)

    _add_ocean_commands(commands)
    return parser


def split_config_flags(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(other arguments, config flags): every `--section.key VALUE` / `--section.key=VALUE` with its value.

    argparse alone cannot tell `--train.total-timesteps 819200` from a flag and a positional (the env):
    config flags always take a value, so each one takes the argument after it, whatever it looks like."""
    rest: list[str] = []
    flags: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg[2:].partition('=')[0]
        if arg.startswith('--') and '.' in name:
            takes_next = '=' not in arg and i + 1 < len(argv)
            flags.extend(argv[i:i + 2] if takes_next else [arg])
            i += 2 if takes_next else 1
        else:
            rest.append(arg)
            i += 1
    return rest, flags


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # a command line, not a call from Python: the hints we print repeat how it started
        invocation.record()
    parser = build_parser()
    argv, flags = split_config_flags(sys.argv[1:] if argv is None else list(argv))
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    extra = flags + extra
    if extra and not getattr(args, 'takes_flags', False):
        parser.error(f'unrecognized arguments: {" ".join(extra)}')
    try:
        if getattr(args, 'takes_flags', False):
            return args.func(args, extra) or 0
        return args.func(args) or 0
    except (pufferlib.PufferError, OSError) as exc:  # a user's mistake or a file system's refusal: no traceback
        print(f'puffer {args.command}: error: {exc}', file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # pufferlib.train.StoppedAtOnce says what was lost and where to resume
        print(f'puffer {args.command}: {str(exc) or "interrupted"}', file=sys.stderr)
        return getattr(exc, 'exit_code', 130)
    except ModuleNotFoundError as exc:  # the command's extra is not installed: say which, not where it failed
        top = (exc.name or '').partition('.')[0]
        if top not in EXTRA_OF:
            raise
        needed, group = EXTRA_OF[top]
        print(f'puffer {args.command}: error: this command needs {needed}, which is not installed: '
              f'pip install -c constraints.txt -e ".[{group}]" in this repository', file=sys.stderr)
        return 2


# The optional packages the commands import as they run: module -> (the package to install, its extra).
EXTRA_OF = {'torch': ('torch', 'train'), 'matplotlib': ('matplotlib', 'train'), 'PIL': ('Pillow', 'train'),
            'imageio': ('imageio', 'train'), 'onnx': ('onnx', 'export'), 'onnxruntime': ('onnxruntime', 'export'),
            'sklearn': ('scikit-learn', 'sweep'), 'scipy': ('scipy', 'league'), 'openskill': ('openskill', 'league'),
            'pyspiel': ('open_spiel', 'league')}


if __name__ == '__main__':
    sys.exit(main())
