"""The `puffer` command line: `puffer <command> ...`; `puffer --help` lists the commands."""
import argparse
import sys

import pufferlib


def _add_env_argument(parser):
    parser.add_argument('env', help='environment name: puffer_<name> (Ocean) or a Gymnasium id; '
                                    'see `puffer envs`')


def cmd_envs(args):
    for name in pufferlib.env_names():
        if args.filter is None or args.filter.lower() in name.lower():
            print(name)


def cmd_autotune(args):
    from pufferlib import vector
    pufferlib.make(args.env).close()  # an unknown name fails here, with suggestions, before any timing
    print(f'autotune {args.env}: {vector.cpu_count()} cores, {args.seconds:g} s per setting')
    best, sps = vector.autotune(args.env, max_envs=args.max_envs, seconds=args.seconds)
    kwargs = ', '.join(f'{k}={v!r}' for k, v in best.items())
    print(f'\nuse: pufferlib.vector.make({args.env!r}, {kwargs})')


def build_parser():
    parser = argparse.ArgumentParser(prog='puffer', description='pufferlib: fast reinforcement learning')
    parser.add_argument('--version', action='version', version=f'pufferlib {pufferlib.__version__}')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND')

    envs = commands.add_parser('envs', help='list every environment name `puffer` accepts')
    envs.add_argument('filter', nargs='?', help='show only names containing this text')
    envs.set_defaults(func=cmd_envs)

    autotune = commands.add_parser('autotune', help='find the fastest vectorization settings for an env on this machine')
    _add_env_argument(autotune)
    autotune.add_argument('--max-envs', type=int, default=None, help='largest num_envs to try (default 16 x cores)')
    autotune.add_argument('--seconds', type=float, default=1.0, help='measuring time per setting (default 1)')
    autotune.set_defaults(func=cmd_autotune)

    from pufferlib.ocean import tools as ocean_tools  # `bench` and `play` for Ocean envs
    ocean_tools.add_commands(commands)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except pufferlib.PufferError as exc:
        print(f'puffer {args.command}: error: {exc}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())
