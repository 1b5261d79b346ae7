"""Usage errors in the shape of KubeRay's plugin (cobra and pflag): one ``Error: ...`` line on stderr and exit code 1,
with pflag's words for flags (``unknown flag: --x``, ``required flag(s) "x" not set``, ``invalid argument "v" for
"--x" flag: ...``) and each command's own words for a missing or extra argument, so that scripts which read the exit
code or the message see what KubeRay's plugin gives them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

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


def _see(path: str) -> str:
    return f"See 'ray {path} -h' for help and examples"


# What each command of KubeRay v1.7.0's plugin says when it gets the wrong number of arguments (n: how many it got):
# its own Args check with its Use line (cmdutil.UsageErrorf), or cobra's ExactArgs / MaximumNArgs.
_USE = {
    "log": "log (RAYCLUSTER | TYPE/NAME) [--out-dir DIR_PATH] [--node-type all|head|worker] [--link gke]",
    "session": "session (RAYCLUSTER | TYPE/NAME)",
    "delete": "delete (RAYCLUSTER | TYPE/NAME)",
}
ARGUMENT_COUNT: dict[str, Callable[[int], str]] = {
    "create cluster": lambda n: f"cluster [CLUSTERNAME]\n{_see('create cluster')}",
    "create workergroup": lambda n: (
        f"workergroup (WORKERGROUP) [(-r|--ray-cluster) RAYCLUSTER]\n{_see('create workergroup')}"
    ),
    "log": lambda n: f"accepts 1 arg, received {n}\n{_USE['log']}\n{_see('log')}",
    "session": lambda n: f"accepts 1 arg, received {n}\n{_USE['session']}\n{_see('session')}",
    "delete": lambda n: f"accepts a minimum of 1 arg, received {n}\n{_USE['delete']}\n{_see('delete')}",
    "get token": lambda n: f"accepts 1 arg(s), received {n}",
    "scale cluster": lambda n: f"accepts 1 arg(s), received {n}",
    "get cluster": lambda n: f"accepts at most 1 arg(s), received {n}",
    "get node": lambda n: f"accepts at most 1 arg(s), received {n}",
    "get workergroup": lambda n: f"accepts at most 1 arg(s), received {n}",
}
JOB_SUBMIT_USAGE = f"submit [OPTIONS] -f/--filename RAYJOB_YAML -- ENTRYPOINT\n{_see('job submit')}"
_ALIASES = {"clusters": "cluster", "nodes": "node", "workergroups": "workergroup", "logs": "log", "list": "get"}
_EXTRA = re.compile(r"Got unexpected extra argument(s|\(s\))? \((?P<extra>.*)\)")


def _command(error: click_errors.ClickException) -> str:
    """``create cluster`` for ``kubectl ray create clusters ...`` (aliases as the command they stand for)."""
    ctx = getattr(error, "ctx", None)
    words = (getattr(ctx, "command_path", "") or "").split()[2:]  # past "kubectl ray"
    return " ".join(_ALIASES.get(word, word) for word in words)


def is_doctor(error: click_errors.ClickException) -> bool:
    """``kubectl ray doctor`` is raykube's own: its usage errors keep typer's form and doctor's exit code 2."""
    return _command(error).split()[:1] == ["doctor"]


def _argument_count(error: click_errors.ClickException, argv: Sequence[str]) -> str | None:
    """The command's words for a missing or extra argument (None: not such an error, or a command without them)."""
    words = ARGUMENT_COUNT.get(_command(error))
    if words is None:
        return None
    if isinstance(error, click_errors.MissingParameter) and getattr(error, "param_type", None) != "option":
        param = getattr(error, "param", None)
        if param is None or getattr(param, "param_type_name", "") == "argument":
            return words(0)
    if isinstance(error, click_errors.UsageError) and (extra := _EXTRA.fullmatch(error.message)):
        return words(1 + len(extra["extra"].split()))
    return None


def message(error: click_errors.ClickException, argv: Sequence[str]) -> str | None:
    """The ``Error:`` line's text for a usage error, or None for what is not one (help asked for by no arguments)."""
    if isinstance(error, click_errors.NoArgsIsHelpError):
        return None
    found = _argument_count(error, argv) or _flag_error(error, argv)
    if found is not None:
        return found
    if isinstance(error, click_errors.UsageError) and not isinstance(error, click_errors.MissingParameter):
        return error.message
    return error.format_message()


def _flag_error(error: click_errors.ClickException, argv: Sequence[str]) -> str | None:
    """pflag's words for an unknown flag, a required one not given, or a value it cannot take."""
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
    return None
