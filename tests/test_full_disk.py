"""A disk that fills while a checkpoint or an export is written: one error naming the file, the bytes it
was writing and the space free there; no partial or temporary file; what was saved before left as it was.
The disk is simulated (a file that takes half the bytes, then refuses with ENOSPC), so that these run
everywhere; tests/test_train.py fills a real tmpfs where the machine allows mounting one."""
import errno
import os
import re

import pytest
import torch

from pufferlib import export, rundir
from pufferlib.rundir import RunDirError

from small_run import train_small


class FillingFile:
    """A file whose disk fills halfway through the first write: half the bytes land, then ENOSPC."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        half = len(memoryview(data)) // 2
        self.f.write(memoryview(data)[:half])
        self.f.flush()
        raise OSError(errno.ENOSPC, 'No space left on device')

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.f.__exit__(*exc)


def fill_the_disk_for(monkeypatch, name):
    """Every whole write (rundir.atomic_write) of a file called `name` meets a full disk."""
    real_open = open

    def opening(path, *args, **kwargs):
        f = real_open(path, *args, **kwargs)
        return FillingFile(f) if os.path.basename(str(path)).startswith(name + rundir.TMP_MARK) else f
    monkeypatch.setattr(rundir, 'open', opening, raising=False)


def leftovers(folder):
    return sorted(n for _, _, names in os.walk(folder) for n in names if rundir.TMP_MARK in n)


@pytest.fixture
def experiments(tmp_path, monkeypatch):
    monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path / 'experiments'))
    return tmp_path / 'experiments'


def test_a_full_disk_at_a_checkpoint_names_it_keeps_the_last_and_says_how_to_resume(experiments, monkeypatch):
    """Checkpoints every epoch; the disk fills while epoch 2's is written."""
    fill_the_disk_for(monkeypatch, 'epoch-0000002.pt')
    with pytest.raises(RunDirError) as raised:
        train_small('puffer_squared', '--train.checkpoint-interval', '1', steps=3072)
    message = str(raised.value)
    [run_dir] = [str(p) for p in experiments.iterdir()]
    folder = os.path.join(run_dir, 'checkpoints')
    assert '\n' not in message and 'unexpected pos' not in message, message
    assert re.search(rf'cannot write the checkpoint {re.escape(folder)}/epoch-0000002.pt \([\d,]+ bytes to write, '
                     r'[\d,]+ bytes free there\): No space left on device', message), message
    assert re.search(rf'The last checkpoint is {re.escape(folder)}/epoch-0000001.pt; resume with `.*train --resume '
                     rf'{re.escape(run_dir)}`', message), message
    assert sorted(os.listdir(folder)) == ['epoch-0000001.pt'] and leftovers(experiments) == []
    assert torch.load(os.path.join(folder, 'epoch-0000001.pt'), weights_only=True)['epoch'] == 1


@pytest.mark.parametrize('name', [export.ONNX, export.WEIGHTS])
def test_a_full_disk_during_an_export_names_the_file_and_keeps_the_earlier_export(name, experiments, monkeypatch):
    summary = train_small('puffer_squared', steps=1024)
    out = experiments / 'out'
    export.export('puffer_squared', summary['run_dir'], out=str(out))
    before = (out / name).read_bytes()
    fill_the_disk_for(monkeypatch, name)
    with pytest.raises(RunDirError) as raised:
        export.export('puffer_squared', summary['run_dir'], out=str(out))
    assert re.search(rf'cannot write the (ONNX file|native weights) {re.escape(str(out / name))} \([\d,]+ bytes to '
                     r'write, [\d,]+ bytes free there\): No space left on device', str(raised.value)), raised.value
    assert (out / name).read_bytes() == before and leftovers(experiments) == []
