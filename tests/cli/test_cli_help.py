"""`--help` everywhere: every command and subcommand describes itself and exits 0, options
are grouped, examples come out verbatim (copyable) however narrow the terminal, and the
tokens file format shown by `serve --help` is the one the server reads."""

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from arkfs.cli.main import COMMAND_NAMES, COMMANDS, _chosen, build_parser, main
from arkfs.cli.serve import TOKENS_FORMAT
from arkfs.server.auth import Scope, parse_tokens
from tests.support.cli import run_arkfs


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every parser of the tree: its command words, itself, and the one-line help its parent
    lists it with (None for the top)."""
    yield path, parser, None
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                for words, p, line in commands(sub, (*path, name)):
                    yield words, p, helps[name] if words == (*path, name) else line


ALL = list(commands(build_parser()))


def test_the_tree_is_walked() -> None:
    names = {" ".join(words) for words, _, _ in ALL}
    assert {"ark normalize", "ark parse", "ark check", "store check", "xet hash"} <= names
    assert {"publish", "bind", "serve", "mount", "stats", "config show"} <= names


@pytest.mark.parametrize(("words", "parser", "line"), ALL, ids=[" ".join(w) for w, _, _ in ALL])
def test_every_command_describes_itself(
    words: tuple[str, ...],
    parser: argparse.ArgumentParser,
    line: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert parser.description and len(parser.description.split()) >= 8, words
    assert words == () or line, f"{words} has no one-line help in its parent's list"
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            assert action.help, f"{words}: {action.option_strings or action.dest} has no help"
    with pytest.raises(SystemExit) as exited:
        main([*words, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: arkfs") and parser.description.split()[0] in out


def test_examples_are_verbatim_and_options_grouped() -> None:
    example = (
        '  arkfs publish ./data --ark ark:12345/x6np1wh8k --who "Lab of Sines" --what "Sine tables"'
    )
    for columns in ("60", "200"):
        os.environ["COLUMNS"] = columns
        try:
            done = run_arkfs("publish", "--help")
        finally:
            del os.environ["COLUMNS"]
        assert done.returncode == 0 and done.stderr == ""
        lines = done.stdout.splitlines()
        assert example in lines, done.stdout
        heads = [
            "options:",
            "what to publish:",
            "where (default: the embedded store):",
            "metadata (ERC):",
            "output:",
            "Examples:",
        ]
        assert all(head in lines for head in heads), done.stdout
        assert [lines.index(head) for head in heads] == sorted(lines.index(h) for h in heads)
        prose = [line for line in lines if line and not line.startswith(" ")]
        assert all(len(line) <= int(columns) for line in prose), prose  # prose is wrapped


def test_serve_help_shows_the_tokens_file_format_the_server_reads() -> None:
    done = run_arkfs("serve", "--help")
    assert done.returncode == 0
    example = [line for line in TOKENS_FORMAT.splitlines() if line.startswith("  ")]
    assert all(line in done.stdout.splitlines() for line in example)
    tokens = parse_tokens("\n".join(example))
    assert sorted(tokens.values()) == [Scope.READ, Scope.WRITE, Scope.WRITE, Scope.ADMIN]
    for group in ("store:", "listening:", "access:"):
        assert f"\n{group}\n" in done.stdout


def test_the_command_table_is_what_the_modules_register() -> None:
    """`arkfs --help` lists the commands from COMMANDS without importing their modules; the
    lines must be the modules' own, in order, whichever command was chosen."""
    table = [(name, line) for name, _, line in COMMANDS]
    for chosen in (None, "", *COMMAND_NAMES):
        parser = build_parser(chosen)
        (listing,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert [(a.dest, a.help) for a in listing._choices_actions] == table, chosen


@pytest.mark.parametrize("words", [["--version"], ["--help"], ["ark", "--help"]])
def test_only_the_chosen_command_is_imported(words: list[str]) -> None:
    """The fast command line: `arkfs --version` imports no command module, and `arkfs ark
    --help` none but its own."""
    script = (
        "import sys\nfrom arkfs.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('arkfs.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *words], capture_output=True, text=True, timeout=60
    )
    loaded = set(done.stdout.split("\n")[-2].split())
    commands = {f"arkfs.cli.{module}" for _, module, _ in COMMANDS}
    assert loaded & commands == ({"arkfs.cli.ark"} if words[0] == "ark" else set())
    assert not any(m.startswith(("arkfs.mount", "arkfs.server", "arkfs.backend")) for m in loaded)


def test_the_command_is_found_after_top_options_with_values() -> None:
    assert _chosen(["--ca-file", "mount", "withdraw", "--help"]) == "withdraw"
    assert _chosen(["--ca-file=x.pem", "serve"]) == "serve"
    assert _chosen(["--version"]) == ""
