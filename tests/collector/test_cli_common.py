"""The parser preamble every command line shares (``tau_collector.cli.common``): examples kept as written,
``--version``, a subcommand's arguments carrying what runs it, usage errors as argparse reports its own."""

from __future__ import annotations

import argparse

import pytest

from tau_collector.cli.common import EXIT_USAGE, command_parser, print_usage_error, subcommand_parser, usage_error

EXAMPLES = "examples:\n  tool run  x    # kept as written\n      --wide y"


def test_a_command_keeps_its_examples_as_written_and_has_version_when_asked(capsys):
    parser = command_parser("tool", description="Does things.", epilog=EXAMPLES, version="1.2")
    assert EXAMPLES in parser.format_help()
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == "tool 1.2\n"
    plain = command_parser("tool", description="Does things.", epilog=EXAMPLES)
    with pytest.raises(SystemExit):
        plain.parse_args(["--version"])
    assert "unrecognized arguments: --version" in capsys.readouterr().err


def test_a_subcommand_carries_its_run_and_parser_and_its_usage_errors_name_it(capsys):
    top = command_parser("tool", description="", epilog="")
    def run(args: argparse.Namespace) -> int:
        return usage_error(args, "--size must be positive")
    sub = subcommand_parser(top.add_subparsers(), "go", run, help="go somewhere", description="Goes.",
                            epilog=EXAMPLES, usage="tool go [--size N]")
    sub.add_argument("--size", type=int)
    args = top.parse_args(["go", "--size", "0"])
    assert args.func is run and args.parser is sub
    assert EXAMPLES in sub.format_help()
    assert args.func(args) == EXIT_USAGE
    assert capsys.readouterr().err == "usage: tool go [--size N]\ntool go: error: --size must be positive\n"


def test_a_usage_error_without_a_parser_names_the_collector_and_one_with_a_usage_prints_it(capsys):
    assert usage_error(argparse.Namespace(), "no command") == EXIT_USAGE
    assert capsys.readouterr().err == "tau-collector: error: no command\n"
    assert print_usage_error("usage: x [-h]\n", "x", "bad") == EXIT_USAGE
    assert capsys.readouterr().err == "usage: x [-h]\nx: error: bad\n"
