"""scripts/check_c_format.sh, the C style check of .ci/run and the pre-commit hook: it passes on the tree,
names a file that differs together with the command that fixes it, --fix rewrites, and a clang-format of
another version than the pin is refused instead of reporting differences that are not there."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'check_c_format.sh')


def run(*args, env=None):
    return subprocess.run(['bash', SCRIPT, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.fixture(scope='module')
def pinned():
    """Skip where the pinned clang-format is not installed (it comes with the test extra)."""
    result = run(os.devnull)  # exit 2: no clang-format, or not the pinned one
    if result.returncode == 2:
        pytest.skip(result.stderr.strip())


def test_the_c_code_is_formatted(pinned):
    result = run()
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_file_that_differs_is_named_with_the_fix(pinned, tmp_path):
    # the file sits beside a copy of the style: clang-format looks for .clang-format from the file up
    shutil.copy(os.path.join(ROOT, '.clang-format'), tmp_path)
    source = tmp_path / 'probe.h'
    source.write_text('static int probe(int *x) {  return x[0];  }\n')
    result = run(str(source))
    assert result.returncode == 1
    assert str(source) in result.stdout and 'check_c_format.sh --fix' in result.stdout
    assert run('--fix', str(source)).returncode == 0
    assert source.read_text() == 'static int probe(int *x) { return x[0]; }\n'
    assert run(str(source)).returncode == 0


def test_another_clang_format_version_is_refused(tmp_path):
    fake = tmp_path / 'clang-format'
    fake.write_text('#!/bin/sh\necho "clang-format version 1.2.3"\n')
    fake.chmod(0o755)
    result = run(env={'CLANG_FORMAT': str(fake)})
    pin = re.search(r'^clang-format==(\S+)$', open(os.path.join(ROOT, 'constraints.txt')).read(), re.M).group(1)
    assert result.returncode == 2
    assert '1.2.3' in result.stderr and pin in result.stderr and 'constraints.txt' in result.stderr
