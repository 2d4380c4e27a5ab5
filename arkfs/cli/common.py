"""What every CLI command shares: exit codes and the bad-input error."""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class BadInput(Exception):
    """Input or usage the user must correct; the CLI prints it as one line and exits 2."""
