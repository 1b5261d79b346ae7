"""Usage errors in the shape of KubeRay's plugin (cobra and pflag): one ``Error: ...`` line on stderr and exit code 1,
with pflag's words for flags (``unknown flag: --x``, ``required flag(s) "x" not set``, ``invalid argument "v" for
"--x" flag: ...``), so that scripts which read the exit code or the first line see what KubeRay's plugin gives them.
A missing or extra argument keeps typer's words (cobra's differ from command to command)."""

from __future__ import annotations

from collections.abc import Sequence

from typer._click import exceptions as click_errors


def _value(argv: Sequence[str], names: Sequence[str]) -> str:
    """The value given on the command line to the flag ``names`` (``--x v`` or ``--x=v``; the last one wins)."""
    found = ""
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                found = argv[i + 1]
            elif word.startswith(name + "=") and name.startswith("--"):
                found = word[len(name) + 1 :]
    return found


def _flag_names(opts: Sequence[str]) -> str:
    """pflag's name of a flag in its messages: ``--x``, or ``-x, --long`` when it has a shorthand."""
    short = [o for o in opts if not o.startswith("--")]
    long = [o for o in opts if o.startswith("--")]
    return ", ".join([*short[:1], *long[:1]]) or opts[0]


def message(error: click_errors.ClickException, argv: Sequence[str]) -> str | None:
    """The ``Error:`` line's text for a usage error, or None for what is not one (help asked for by no arguments)."""
    if isinstance(error, click_errors.NoArgsIsHelpError):
        return None
    if isinstance(error, click_errors.NoSuchOption):
        name = error.option_name
        return f"unknown flag: {name}" if name.startswith("--") else f"unknown shorthand flag: {name[1:2]!r} in {name}"
    param = getattr(error, "param", None)
    opts = list(getattr(param, "opts", []) or [])
    is_option = param is not None and getattr(param, "param_type_name", "") == "option"
    hint = getattr(error, "param_hint", None)
    if param is None and isinstance(hint, str) and hint.startswith("-"):  # our own checks name the flag this way
        opts, is_option = [hint], True
    if isinstance(error, click_errors.MissingParameter) and is_option:
        long = next((o for o in opts if o.startswith("--")), opts[0] if opts else "")
        return f'required flag(s) "{long.lstrip("-")}" not set'
    if isinstance(error, click_errors.BadParameter) and is_option and opts:
        value = _value(argv, opts)
        why = error.message
        if "valid integer" in why:
            why = f'strconv.ParseInt: parsing "{value}": invalid syntax'
        elif "valid number" in why:
            why = f'strconv.ParseFloat: parsing "{value}": invalid syntax'
        return f'invalid argument "{value}" for "{_flag_names(opts)}" flag: {why}'
    if isinstance(error, click_errors.UsageError):
        return error.format_message() if isinstance(error, click_errors.MissingParameter) else error.message
    return error.format_message()
