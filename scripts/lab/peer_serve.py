"""The answer loop of every peer driver (bench_anchor, bench_envpool, bench_nmmo): one JSON request a line on
stdin, one JSON answer a line on stdout. It runs in the peer's venv, so it imports nothing but the standard
library (the lab's folder is the only addition to that interpreter's path)."""
import contextlib
import json
import os
import sys
import traceback


def serve(commands, catch=(Exception,)):
    """Answer requests `{"command": NAME, ...}` with `commands[NAME](**rest)` until stdin closes. Answers go
    to the real stdout; anything the peer prints (its dashboards, warnings, gym's numpy 2 notice) goes to
    stderr, so it can never corrupt an answer. An exception of a kind in `catch` becomes {"error": ...}."""
    answers = os.fdopen(os.dup(1), 'w', buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        request = json.loads(line)
        command = request.pop('command')
        try:
            with contextlib.redirect_stdout(sys.stderr):
                answer = commands[command](**request)
        except catch as exc:
            traceback.print_exc()
            answer = {'error': f'{type(exc).__name__}: {exc}'}
        answers.write(json.dumps(answer) + '\n')
