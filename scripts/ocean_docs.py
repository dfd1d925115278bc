#!/usr/bin/env python
"""The Ocean catalogue and option reference in docs/ocean.md, generated from the env folders' spec.toml.

    python scripts/ocean_docs.py           rewrite the two generated sections of docs/ocean.md
    python scripts/ocean_docs.py --check   exit 1 if they are out of date (tests/test_ocean_spec.py runs this)

Envs are found by scanning ocean/ (ocean/spec.py `discover`), so a new env folder shows up here
without touching this file; ocean/docs.py renders the sections. Only the text between the
<!-- ocean-catalogue --> and <!-- ocean-options --> markers is written; the rest of docs/ocean.md
is prose.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'ocean.md')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true', help='only check that docs/ocean.md is up to date')
    args = parser.parse_args(argv)
    from pufferlib import ocean
    from pufferlib.ocean import docs
    scripted = {name: list(ocean.scripted_policies(name)) for name in ocean.ENVS}
    sections = docs.render(ocean.SPECS, scripted)
    doc = open(DOC).read()
    stale = [name for name, text in sections.items() if docs.section(name, doc) != text]
    if args.check:
        if stale:
            print(f'docs/ocean.md is out of date ({", ".join(stale)}): run python scripts/ocean_docs.py')
            return 1
        return 0
    for name, text in sections.items():
        docs.update_section(name, docs.SECTIONS[name], text, path=DOC)
    print(f'wrote {os.path.relpath(DOC, ROOT)}' if stale else 'docs/ocean.md was up to date')
    return 0


if __name__ == '__main__':
    sys.exit(main())
