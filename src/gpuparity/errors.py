"""Errors a user can fix: the CLI prints them as one line and exits 2, never a traceback."""


class UserError(Exception):
    """Bad input (file, option, run id). Message is shown as is."""

    exit_code = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's time limit, `kill`, torchrun stopping its workers): a run stops as it
    does on Ctrl-C, keeping the results that finished; the exit status is 143 instead of 130."""
