"""The one exception type for user mistakes: the CLI prints it as a single line."""


class BisentError(Exception):
    """A problem with the user's input or configuration.

    The message should name the file, the line where there is one, and the
    problem, e.g. ``corpus.de:17: line is not valid UTF-8``. The CLI prints it
    as ``bisent: error: <message>`` and exits with status 2, never a traceback.
    """


def where(path, line=None) -> str:
    """``path`` or ``path:line`` for error messages (line numbers are 1-based)."""
    return f"{path}:{line}" if line is not None else str(path)
