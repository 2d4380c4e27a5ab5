"""`arkfs completion bash|zsh`: scripts generated from the parser, that complete."""

import subprocess

from tests.support.cli import run_arkfs


def bash_complete(script: str, *words: str) -> list[str]:
    """What the bash completion offers for the command line words (the last is completed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _arkfs; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_bash_completes_commands_subcommands_and_options() -> None:
    done = run_arkfs("completion", "bash")
    assert done.returncode == 0, done.stderr
    script = done.stdout
    assert bash_complete(script, "arkfs", "mo") == ["mount"]
    assert set(bash_complete(script, "arkfs", "mount", "/mnt", "--allow-")) == {
        "--allow-other",
        "--allow-root",
        "--allow-private",
    }
    assert "normalize" in bash_complete(script, "arkfs", "ark", "")
    assert bash_complete(script, "arkfs", "ark", "mint", "--sh") == ["--shoulder"]
    assert "zsh" in bash_complete(script, "arkfs", "completion", "z")


def test_zsh_script_parses_and_names_every_command() -> None:
    done = run_arkfs("completion", "zsh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#compdef arkfs\n")
    check = subprocess.run(["zsh", "-n"], input=done.stdout, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    for command in ("publish", "mount", "serve", "config", "completion"):
        assert f"({command})" in done.stdout
