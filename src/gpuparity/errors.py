"""Errors a user can fix: the CLI prints them as one line and exits 2, never a traceback."""


class UserError(Exception):
    """Bad input (file, option, run id). Message is shown as is."""

    exit_code = 2
