"""What every CLI command shares: exit codes and the bad-input error."""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_CODES = """\
  0   success
  1   failure: a server, store, network or system error (one line on stderr says which)
  2   bad input or usage: the command, an option, a file or a URL to correct (one line)
  130 interrupted (Ctrl-C); an interrupted publish resumes when run again"""


class BadInput(Exception):
    """Input or usage the user must correct; the CLI prints it as one line and exits 2."""


class Interrupted(Exception):
    """The user interrupted a command; the CLI prints what was done in one line and exits
    130."""


def first_error(error: BaseException) -> BaseException:
    """The first error in a (nested) exception group, or error itself: the one the user is
    told about."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
