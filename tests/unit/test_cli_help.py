"""The console command's help says the same thing at the top and per command: every command's
summary, every argument's help, and one spelling of the source syntax."""

import os
import re
import subprocess
import sys

from dbt.adapters.hiveopt.cli import COMMANDS, NAMES_HELP, build_parser


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _command_help(name: str) -> str:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return subparsers.choices[name].format_help()


def test_top_level_help_lists_every_command_with_the_words_of_its_own_help():
    top = _flat(build_parser().format_help())
    for name, summary in COMMANDS.items():
        assert f"{name} {_flat(summary)}" in top, name
        assert _flat(summary) in _flat(_command_help(name)), name


def test_the_source_syntax_is_spelled_the_same_in_both_helps():
    top, analyze = _flat(build_parser().format_help()), _flat(_command_help("analyze"))
    assert _flat(NAMES_HELP) in top and _flat(NAMES_HELP) in analyze
    assert top.count("source:") == analyze.count("source:") == 1


def test_every_argument_has_a_help_text():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    for name, command in subparsers.choices.items():
        for action in command._actions:
            assert action.help, (name, action.dest)


def test_the_installed_console_script_prints_the_same_help():
    script = os.path.join(os.path.dirname(sys.executable), "hiveopt")
    printed = subprocess.run([script, "analyze", "--help"], capture_output=True, text=True, check=True).stdout
    assert _flat(printed) == _flat(_command_help("analyze"))
