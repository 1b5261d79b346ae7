"""SIGTERM ends a raykube command as Ctrl-C does, so the command's clean-up (``finally``: the sandbox it started
stopped, its files removed) runs instead of Python dying where it stood."""

from __future__ import annotations

import os
import signal

import pytest

from raykube.cli import main


def test_sigterm_raises_keyboard_interrupt_once_a_command_starts() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        main._main()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
