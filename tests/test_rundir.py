"""The run layer (pufferlib/rundir.py): unique dated directories, the lock that names its owner and is
taken over when stale, whole writes, the ledger cut back on resume, and what "latest" means. The same
lock guards run, sweep and league directories: tests/test_train.py, test_sweep.py and
test_league_loop.py refuse a second process on each."""
import json
import os
import subprocess
import sys
import time

import pytest

from pufferlib import rundir
from pufferlib.pufferenv import PufferError


class OtherError(PufferError):
    pass


def test_directories_started_in_the_same_second_get_distinct_names_and_their_subfolders(tmp_path):
    paths = [rundir.new_directory(str(tmp_path / 'leagues'), 'puffer_kuhn-psro', ['policies']) for _ in range(3)]
    assert len(set(paths)) == 3
    assert all(os.path.isdir(os.path.join(p, 'policies')) for p in paths)
    assert all(os.path.basename(p).startswith('puffer_kuhn-psro-') for p in paths)


def test_a_lock_names_its_owner_to_a_second_process_and_the_kind_of_directory(tmp_path):
    code = ('import sys; from pufferlib import rundir; lock = rundir.claim(sys.argv[1], "league"); '
            'print("locked", flush=True); sys.stdin.read(); lock.release()')
    holder = subprocess.Popen([sys.executable, '-c', code, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'locked'
        with pytest.raises(OtherError, match=f'the league {tmp_path} is already running \\(pid {holder.pid} on host'):
            rundir.claim(str(tmp_path), 'league', OtherError)
    finally:
        holder.communicate('', timeout=60)
    assert not os.path.exists(tmp_path / 'lock')  # released by its owner
    lock = rundir.claim(str(tmp_path), 'league', OtherError)  # and free for the next
    lock.release()


def test_a_stale_lock_is_taken_over_and_leftover_temporary_files_are_cleared(tmp_path, capsys):
    (tmp_path / 'lock').write_text('pid 99999999 on host elsewhere since yesterday')
    (tmp_path / 'policies').mkdir()
    (tmp_path / 'policies' / f'p003.pt{rundir.TMP_MARK}4242').write_bytes(b'half a policy')
    lock = rundir.claim(str(tmp_path), 'league')
    err = capsys.readouterr().err
    assert 'had a stale lock (pid 99999999 on host elsewhere' in err and 'removed 1 temporary file' in err
    assert os.listdir(tmp_path / 'policies') == []
    assert f'pid {os.getpid()}' in (tmp_path / 'lock').read_text()
    lock.release()


def test_whole_writes_leave_the_old_file_when_the_write_fails(tmp_path):
    path = str(tmp_path / 'payoffs.json')
    rundir.write_text(path, json.dumps({'a': 1}))
    assert rundir.read_json(path) == {'a': 1}

    def half(f):
        f.write(b'{"a": ')
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        rundir.atomic_write(path, half)
    assert rundir.read_json(path) == {'a': 1} and os.listdir(tmp_path) == ['payoffs.json']
    assert rundir.read_json(str(tmp_path / 'missing.json')) is None


def test_the_ledger_cuts_a_torn_last_line_and_names_a_damaged_one(tmp_path):
    ledger = rundir.Ledger(str(tmp_path / 'ledger.jsonl'), OtherError)
    assert ledger.read() == []
    ledger.append({'type': 'iteration', 'iteration': 0})
    with open(ledger.path, 'a') as f:
        f.write('{"type": "iter')  # a write cut by a SIGKILL
    assert ledger.read() == [{'type': 'iteration', 'iteration': 0}]
    ledger.repair()
    ledger.append({'type': 'iteration', 'iteration': 1})
    assert [r['iteration'] for r in ledger.read()] == [0, 1]
    with open(ledger.path, 'a') as f:
        f.write('not json\n{"type": "session"}\n')
    with pytest.raises(OtherError, match='ledger.jsonl line 3 is not a JSON record'):
        ledger.read()


def test_a_ledger_with_a_schema_names_a_whole_line_it_refuses(tmp_path):
    def check(record):
        return None if isinstance(record, dict) and isinstance(record.get('iteration'), int) else 'no iteration'
    ledger = rundir.Ledger(str(tmp_path / 'ledger.jsonl'), OtherError, check)
    ledger.append({'type': 'iteration', 'iteration': 0})
    with open(ledger.path, 'a') as f:
        f.write('{"type": "iteration"}\n{"type": "iter')  # a wrong line, then a torn one
    with pytest.raises(OtherError, match=r'ledger.jsonl line 2 is not a record of this ledger \(no iteration\)'):
        ledger.read()
    assert len(rundir.Ledger(ledger.path).read()) == 2  # without a schema any JSON line is a record


def _run(root, name, env, age):
    path = root / name
    (path / 'checkpoints').mkdir(parents=True)
    (path / 'config.toml').write_text(f'[_meta]\nenv = "{env}"\n')
    stamp = time.time() - age
    os.utime(path / 'config.toml', (stamp, stamp))
    return path


def test_latest_is_the_run_written_to_most_recently_for_the_named_env(tmp_path, monkeypatch):
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
    with pytest.raises(rundir.RunNotFoundError, match='no runs'):
        rundir.latest_run()
    old_pong = _run(tmp_path, 'puffer_pong-1', 'puffer_pong', age=300)
    squared = _run(tmp_path, 'puffer_squared-1', 'puffer_squared', age=200)
    new_pong = _run(tmp_path, 'puffer_pong-2', 'puffer_pong', age=100)
    (tmp_path / 'not-a-run').mkdir()
    assert rundir.latest_run() == str(new_pong)
    assert rundir.latest_run('puffer_squared') == str(squared)
    # an older run that wrote a checkpoint just now is the latest: it was written to most recently
    (old_pong / 'checkpoints' / 'epoch-0000001.pt').write_bytes(b'')
    assert rundir.latest_run('puffer_pong') == str(old_pong)
    assert rundir.find_run('latest', 'puffer_pong') == str(old_pong)
    assert rundir.find_run('puffer_squared-1') == str(squared)
    with pytest.raises(rundir.RunNotFoundError, match='no runs of puffer_maze'):
        rundir.latest_run('puffer_maze')
    with pytest.raises(rundir.RunNotFoundError, match='is not a run directory'):
        rundir.find_run('nope')
