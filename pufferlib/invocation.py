"""The commands `puffer` prints for the user to paste (a resume hint, the sweep's "train with best.toml"
line) in the form that runs in their shell: the program as they started it (`scripts/puffer`, `puffer`,
`python -m pufferlib.cli`), paths as seen from the folder they typed it in, every word quoted.

The CLI calls `record()` once; it keeps both in the environment, so the processes the CLI starts (a
sweep's trials, a league's tasks) print the user's command, not their own."""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import PurePath

PROG = 'PUFFER_PROG'  # the program's words, shell-quoted: `scripts/puffer`, `python -m pufferlib.cli`
CWD = 'PUFFER_CWD'  # the folder the user typed them in
# Set by scripts/puffer, which changes folder before it starts the CLI: the script as typed, and where.
LAUNCHER = 'PUFFER_LAUNCHER'
LAUNCHED_IN = 'PUFFER_LAUNCHED_IN'


def program(argv: Sequence[str], orig_argv: Sequence[str]) -> list[str]:
    """The words that started this process's CLI: the interpreter and its options up to the module (`python
    -m pufferlib.cli`) or script, else the console script (its bare name when that is what PATH finds)."""
    for i, word in enumerate(orig_argv[1:], 1):
        if word == '-m':
            return list(orig_argv[:i + 2])
        if word.startswith('-m'):
            return list(orig_argv[:i + 1])
    script = argv[0] if argv else ''
    if script.endswith('.py') and script in orig_argv[1:]:  # `python pufferlib/cli.py`
        return list(orig_argv[:list(orig_argv).index(script, 1) + 1])
    if not script:
        return default_program()
    found = shutil.which(os.path.basename(script))
    try:
        if found and os.path.samefile(found, script):
            return [os.path.basename(script)]
    except OSError:
        pass
    return [script]


def default_program() -> list[str]:
    """The program for a process the CLI did not start (pufferlib used as a library): `puffer` where it is
    on PATH, else this interpreter running the CLI module."""
    return ['puffer'] if shutil.which('puffer') else [sys.executable, '-m', 'pufferlib.cli']


def record() -> None:
    """Keep how the user started the CLI (from the launcher script's variables, else this process's
    arguments) in the environment, for this process and the ones it starts."""
    launcher = os.environ.pop(LAUNCHER, None)
    launched_in = os.environ.pop(LAUNCHED_IN, None)
    words = [launcher] if launcher else program(sys.argv, getattr(sys, 'orig_argv', sys.argv))
    os.environ[PROG] = shlex.join(words)
    os.environ[CWD] = launched_in if launcher and launched_in else os.getcwd()


def _words() -> list[str]:
    prog = os.environ.get(PROG)
    try:
        return (shlex.split(prog) if prog else []) or default_program()
    except ValueError:  # set by hand and not valid shell: the default is at least a program
        return default_program()


def path(name: str) -> str:
    """A path as the user's shell sees it: relative to the folder they typed the command in when it lies
    below it and the program ran there, else absolute (a launcher that changed folder, or another tree)."""
    full = os.path.abspath(name)
    here = os.getcwd()
    typed_in = os.environ.get(CWD, here)
    if os.path.abspath(typed_in) != here:
        return full
    relative = os.path.relpath(full, here)
    return full if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def command(*args: str | PurePath, anywhere: bool = False) -> str:
    """`args` after the user's program, as one line to paste into their shell. A PurePath arg is a file or
    folder, shown as `path` shows it; with `anywhere` (a line written into a file, read later from any
    folder) the program and those paths are absolute."""
    words = _words()
    if anywhere and os.sep in words[0] and not os.path.isabs(words[0]):
        words[0] = os.path.join(os.environ.get(CWD, os.getcwd()), words[0])
    shown = [a if isinstance(a, str) else os.path.abspath(a) if anywhere else path(str(a)) for a in args]
    return shlex.join([*words, *shown])
