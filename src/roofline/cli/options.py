"""The option types and shared options of the commands: the output formats, integer and seconds
options, MODEL and --plot paths kept as typed, the one --hw of a single-device command, whether
an option was given, and gemm's argument parsing (a signed number is an argument)."""

from __future__ import annotations

import itertools
import math
import re

import click

from ..files.numbers import MAX_INT, parse_int

FORMATS = ("table", "json", "csv", "markdown", "html")
#: plan's formats (``output.plan.PLAN_FORMATS``), a literal as FORMATS is
PLAN_FORMATS = ("table", "json", "csv", "markdown", "html")
#: analysis.whatif_gemm.GEMM_LAYOUTS, a literal so that --help imports no analysis (a test holds
#: them equal)
GEMM_LAYOUTS = ("linear", "matmul")


class Count(click.ParamType):
    """An integer option read by the tool's one integer parser (``files.numbers.parse_int``:
    ASCII digits, ``low`` .. ``high``); anything else is click's usage error, exit 2."""

    name = "integer"

    def __init__(self, low: int = 1, high: int = MAX_INT) -> None:
        self.low, self.high = low, high

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int) and not isinstance(value, bool):  # a default
            return value
        try:
            return parse_int(value, self.low, self.high)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


COUNT = Count()


class Stages(click.ParamType):
    """``--pp``: a count of pipeline stages (``N``) or the transformer blocks of each stage
    (``A,B,...``, as vLLM's ``VLLM_PP_LAYER_PARTITION`` gives them), each read by the tool's one
    integer parser; anything else is click's usage error, exit 2. A list's sum is the model's
    to check (``serving_pp.checked_pp``)."""

    name = "N|A,B,..."

    def __init__(self, high: int) -> None:
        self.high = high

    def convert(self, value, param, ctx) -> int | tuple[int, ...]:
        if isinstance(value, (int, tuple)) and not isinstance(value, bool):  # a default
            return value
        text = str(value)
        try:
            if "," not in text:
                return parse_int(text, 1, self.high)
            parts = text.split(",")
            if len(parts) > self.high:
                raise ValueError(f"{len(parts)} stages is more than {self.high}")
            blocks = []
            for stage, part in enumerate(parts):
                try:
                    blocks.append(parse_int(part, 1, MAX_INT))
                except ValueError as exc:
                    raise ValueError(f"stage {stage}'s blocks: {exc}") from None
            return tuple(blocks)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Seconds(click.FloatRange):
    """A float option in a closed range that also refuses nan: click's range compares, and
    every comparison with nan is false, so ``nan`` passed it (``--measure-budget nan`` then
    bounded nothing: ``estimate > nan`` never holds). Refused as inf, 0 and -1 are."""

    def convert(self, value, param, ctx) -> float:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{number} is not in the range {self._describe_range()}.", param, ctx)
        return number


QUANTIZATION_HELP = ("Fold tile and wave quantization into compute-bound GEMM times (best "
                     "candidate tile of the entry, split-K where chosen); stated in the header.")



#: --plot's FILE, kept as typed: click's Path type reads '' as Path('.'), which
#: ``check_plot_path`` would name as '.' instead of saying the path is empty.
PLOT_FILE = click.Path(dir_okay=False)
#: MODEL, kept as typed for the same reason: an empty path is the library's to refuse as one
#: (``check_model``), where Path('') read as '.', a directory.
MODEL_FILE = click.Path(dir_okay=False)


def _one_device(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str:
    """The one --hw a single-device command takes; a repeated --hw is a usage error (click
    would keep the last and drop the others unsaid)."""
    if len(value) > 1:
        raise click.BadParameter(f"`roofline {ctx.info_name}` takes one device, given "
                                 f"{len(value)} ({', '.join(value)}); `roofline compare` "
                                 f"takes several", ctx, param)
    return value[0]


def _given(name: str) -> bool:
    """Whether option ``name`` came from the command line (not its default)."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(name) == ParameterSource.COMMANDLINE


class SignedArguments(click.Command):
    """A command whose arguments are numbers (gemm's M N K): a word of a minus and a digit
    (``-1``, ``-1.5``) is an argument, left to the number check to refuse (``expected a positive
    integer, got '-1'``), not an option click does not know (click reads every word starting
    with ``-`` as one: ``No such option '-1'``). Such a command line is parsed with its
    arguments, in their order, after ``--``; every other is parsed as click parses it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        head = args[:args.index("--")] if "--" in args else args
        if any(_SIGNED.fullmatch(word) for word in head):
            args = self._arguments_last(args)
        return super().parse_args(ctx, args)

    def _arguments_last(self, args: list[str]) -> list[str]:
        nargs = {name: param.nargs for param in self.params if isinstance(param, click.Option)
                 and not param.is_flag and not param.count for name in param.opts}
        options: list[str] = []
        arguments: list[str] = []
        words = iter(args)
        for word in words:
            if word == "--":
                arguments += words
            elif word.startswith("-") and not _SIGNED.fullmatch(word):
                values = list(itertools.islice(words, nargs.get(word, 0)))  # not --hw=a100's
                if len(values) < nargs.get(word, 0):
                    return args  # an option without its value: click names it
                options += [word, *values]
            else:
                arguments.append(word)
        return [*options, "--", *arguments]


_SIGNED = re.compile(r"-\.?[0-9].*", re.DOTALL)
