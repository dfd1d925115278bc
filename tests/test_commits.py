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
