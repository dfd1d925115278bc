import os
import subprocess
import sys

PUFFER = os.path.join(os.path.dirname(sys.executable), 'puffer')  # the venv's console script


def test_core_imports_without_torch():
    code = ('import sys; sys.modules["torch"] = None\n'  # any "import torch" now raises ImportError
            'import pufferlib, pufferlib.emulation, pufferlib.vector\n'
            'env = pufferlib.vector.make("CartPole-v1", num_envs=2)\n'
            'print(env.reset(seed=0)[0].shape)')
    # the timeouts bound a hang only: on a busy machine these imports alone can take a minute
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '(2, 4)'


def test_the_run_layer_imports_without_torch(tmp_path):
    """Run directories and their checkpoints' paths are found before torch loads (pufferlib.rundir)."""
    (tmp_path / 'checkpoints').mkdir()
    for name in ('epoch-0000002.pt', 'epoch-0000010.pt', 'notes.txt'):
        (tmp_path / 'checkpoints' / name).write_bytes(b'')
    code = ('import sys; sys.modules["torch"] = None\n'
            'from pufferlib.rundir import CheckpointError, latest_checkpoint\n'
            'print(latest_checkpoint(sys.argv[1]))')
    out = subprocess.run([sys.executable, '-c', code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / 'checkpoints' / 'epoch-0000010.pt')


def test_console_script_is_installed():
    out = subprocess.run([PUFFER, '--help'], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and 'autotune' in out.stdout
    out = subprocess.run([PUFFER, 'envs', 'CartPole'], capture_output=True, text=True, timeout=300)
    assert 'CartPole-v1' in out.stdout.split()
