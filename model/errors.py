"""Errors that reach the user as one clear message (the CLI prints them without a traceback)."""


class UserError(Exception):
    """Bad input from the user: a config, a flag, a file. The CLI prints it and exits 2."""


class ConfigError(UserError):
    """A configuration value is missing, has the wrong type, or is out of range. Names the field."""


class TraceError(UserError):
    """A directory is not a readable trace (missing files, wrong schema version)."""
