"""scripts/check_commits.sh: commit subjects of at most 72 characters, a blank line before the body."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'check_commits.sh')


def check(tmp_path, message):
    path = tmp_path / 'COMMIT_EDITMSG'
    path.write_text(message)
    return subprocess.run(['bash', SCRIPT, '--message', str(path)], capture_output=True, text=True, timeout=60)


def test_a_short_subject_with_a_body_passes(tmp_path):
    assert check(tmp_path, 'vector: one place for the [vec] section\n\nWhy it matters.\n').returncode == 0
    assert check(tmp_path, 'x' * 72 + '\n').returncode == 0


def test_a_long_subject_or_a_missing_blank_line_is_refused(tmp_path):
    out = check(tmp_path, 'x' * 73 + '\n\nbody\n')
    assert out.returncode == 1 and 'the subject is 73 characters (at most 72)' in out.stderr
    out = check(tmp_path, 'subject\nbody right under it\n')
    assert out.returncode == 1 and 'blank line between the subject and the body' in out.stderr
    assert check(tmp_path, 'subject\n# a comment git strips\n').returncode == 0


def test_the_history_since_the_rule_keeps_to_it():
    out = subprocess.run(['bash', SCRIPT], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr


def _repo_with_history(path, subjects):
    """A small repository holding this script, one commit per subject (the last one on top)."""
    os.makedirs(path / 'scripts')
    (path / 'scripts' / 'check_commits.sh').write_text(open(SCRIPT).read())
    git = ['git', '-C', str(path), '-c', 'user.name=t', '-c', 'user.email=t@t']
    subprocess.run(git + ['init', '-q'], check=True)
    for i, subject in enumerate(subjects):
        (path / 'f').write_text(str(i))
        subprocess.run(git + ['add', '-A'], check=True)
        subprocess.run(git + ['commit', '-q', '-m', subject], check=True)


def test_a_shallow_clone_judges_the_commits_it_has(tmp_path):
    # A shallow clone lacks the commit the rule began at: it judges what it has, never nothing.
    _repo_with_history(tmp_path / 'full', ['one', 'two', 'y' * 73, 'four'])
    for depth, ok in ((1, True), (2, False)):
        clone = tmp_path / f'depth{depth}'
        subprocess.run(['git', 'clone', '-q', '--depth', str(depth), f'file://{tmp_path / "full"}', str(clone)],
                       check=True)
        out = subprocess.run(['bash', str(clone / 'scripts' / 'check_commits.sh')], capture_output=True,
                             text=True, timeout=60)
        assert f'judging the {depth} commits it has' in out.stdout
        assert (out.returncode == 0) == ok, out.stderr
        if not ok:
            assert 'the subject is 73 characters' in out.stderr


def test_a_full_history_without_the_rule_commit_is_an_error(tmp_path):
    _repo_with_history(tmp_path, ['one'])
    out = subprocess.run(['bash', str(tmp_path / 'scripts' / 'check_commits.sh')], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and 'is not in this history and the clone is not shallow' in out.stderr
