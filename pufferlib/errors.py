"""The errors users can cause: every error pufferlib raises on purpose is one of these, so a caller can
catch PufferError, or the kind it expects, and the message says what to do.

They live apart from the env contract (pufferlib/pufferenv.py, which re-exports them) so that modules the
contract builds on, the saved-state header among them, can raise them without importing the contract.
"""


class PufferError(Exception):
    """Base class of every error pufferlib raises on purpose."""


class APIUsageError(PufferError, ValueError):
    """The caller used the API in a way it does not support (wrong shape, order of calls, ...)."""


class APITypeError(PufferError, TypeError):
    """An argument has the wrong type (a list where a tensor goes, a string where a number goes, ...)."""


class MissingDependencyError(PufferError, ImportError):
    """An optional package is not installed; the message says which pip extra installs it."""


class SpaceError(PufferError, TypeError):
    """An observation or action does not match its space, or a space cannot be emulated."""


class EnvError(PufferError, RuntimeError):
    """An environment, or the worker process running it, failed."""

    # The signal number that ended the worker process, when one did: a sweep tells the OOM killer's SIGKILL
    # (the machine's doing) from an env's own SIGSEGV (the config's).
    worker_signal: int | None = None


class ActionMaskError(APIUsageError):
    """An action mask has the wrong shape or dtype, allows no action on a row that must act, or
    vanished in the middle of an episode."""


class IllegalActionError(ActionMaskError):
    """An action that the env's action mask forbids was submitted to step()."""


class StateError(APIUsageError):
    """A saved env state cannot be loaded here (another env, version, option set or build; truncated;
    corrupt; a game id out of range), or the env cannot save its state at all."""
