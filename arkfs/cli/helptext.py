"""How `--help` is laid out: prose wrapped to the terminal, indented lines (examples, file
formats, tables) kept verbatim so they can be copied."""

import argparse
import textwrap
from typing import Any

# What option adders take: a parser, or one of its argument groups.
Options = argparse._ActionsContainer


class HelpFormatter(argparse.HelpFormatter):
    """Wraps each paragraph of prose in a description or epilog; a line that starts with a
    space is printed as it is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        prose: list[str] = []

        def wrap() -> None:
            if prose:
                words = " ".join(" ".join(prose).split())
                out.append(
                    textwrap.fill(
                        words,
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                        break_long_words=False,
                        break_on_hyphens=False,
                    )
                )
                prose.clear()

        for line in text.splitlines():
            if line.startswith(" ") and line.strip():
                wrap()
                out.append(indent + line)
            elif not line.strip():
                wrap()
                out.append("")
            else:
                prose.append(line)
        wrap()
        return "\n".join(out)


class Parser(argparse.ArgumentParser):
    """arkfs's parsers: laid out by HelpFormatter; add_subparsers makes Parsers too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
