"""Print the requirements of pufferlib (core + the given extras) from pyproject.toml, one per line.

    python docker/requirements.py pyproject.toml [--extras common,torch] [--no-core]
    python docker/requirements.py --pins-for NAMES_FILE --constraints constraints.txt

The image layers install dependencies from this list (with --constraint constraints.txt) in a layer
of their own, before the source is copied, so editing a Python file never reinstalls them, and a
pyproject.toml edit that leaves the list unchanged leaves the layer cached. An extra that
pyproject.toml does not define (yet) is reported on stderr and skipped, so an image can ask for
extras before they exist. Self-references such as `pufferlib[atari,procgen]` are expanded.

--pins-for prints `name==version` from the constraints file for each package named in NAMES_FILE
(one name per line, # comments): the packages installed with --no-deps because their metadata
conflicts with our pins. A name with no pin yet is reported on stderr and skipped.
"""
import argparse
import re
import sys
import tomllib


def requirement_name(requirement):
    return re.split(r'[\s\[<>=!~;@]', requirement.strip(), maxsplit=1)[0].lower().replace('_', '-')


def collect(project, extras, with_core):
    name = project['name'].lower()
    optional = project.get('optional-dependencies', {})
    requirements, seen, missing = [], set(), []

    def add(requirement):
        if requirement_name(requirement) == name:  # pufferlib[a,b] inside an extra
            inner = re.search(r'\[([^\]]*)\]', requirement)
            for extra in (inner.group(1).split(',') if inner else []):
                add_extra(extra.strip())
        elif requirement not in requirements:
            requirements.append(requirement)

    def add_extra(extra):
        if extra in seen:
            return
        seen.add(extra)
        if extra not in optional:
            missing.append(extra)
            return
        for requirement in optional[extra]:
            add(requirement)

    if with_core:
        for requirement in project.get('dependencies', []):
            add(requirement)
    for extra in extras:
        add_extra(extra)
    return requirements, missing


def normalize(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def pins_for(names_file, constraints_file):
    pins = {}
    with open(constraints_file) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if '==' in line:
                name, version = line.split('==', 1)
                pins[normalize(name)] = f'{name.strip()}=={version.strip()}'
    lines = []
    with open(names_file) as f:
        for line in f:
            name = line.split('#', 1)[0].strip()
            if not name:
                continue
            if normalize(name) in pins:
                lines.append(pins[normalize(name)])
            else:
                print(f'requirements.py: {name} has no pin in {constraints_file} yet; skipped', file=sys.stderr)
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('pyproject', nargs='?')
    parser.add_argument('--pins-for', metavar='NAMES_FILE', help='print the pins of these packages')
    parser.add_argument('--constraints', default='constraints.txt')
    parser.add_argument('--extras', default='', help='comma-separated extras to include')
    parser.add_argument('--no-core', action='store_true', help='leave out the core dependencies')
    args = parser.parse_args(argv)
    if args.pins_for:
        print('\n'.join(pins_for(args.pins_for, args.constraints)))
        return 0
    if not args.pyproject:
        parser.error('give pyproject.toml (or --pins-for)')
    with open(args.pyproject, 'rb') as f:
        project = tomllib.load(f)['project']
    extras = [extra.strip() for extra in args.extras.split(',') if extra.strip()]
    requirements, missing = collect(project, extras, not args.no_core)
    for extra in missing:
        defined = ', '.join(sorted(project.get('optional-dependencies', {}))) or 'none'
        print(f'requirements.py: extra {extra!r} is not defined in {args.pyproject} (defined: {defined}); '
              f'skipped', file=sys.stderr)
    print('\n'.join(requirements))
    return 0


if __name__ == '__main__':
    sys.exit(main())
