"""--interactive reads what a terminal sends: every key of a burst, in order."""

from __future__ import annotations

import pytest
from host import ROOT_OF_SMOKE_TEST  # noqa: F401 - puts the smoke test's package on the path
from smoke_test.terminal import split_keys


@pytest.mark.parametrize(
    ("sent", "keys"),
    [
        ("\x1b[B", ["down"]),
        ("\x1b[B\x1b[B\r", ["down", "down", "enter"]),  # a held key, then enter
        ("\x1bOA\x1bOB", ["up", "down"]),  # application mode
        ("yes\r", ["y", "e", "s", "enter"]),  # a paste
        ("a\x1b[1;5Cb", ["a", "b"]),  # ctrl-right: a key zot does not send
        ("\x1b[15~x", ["x"]),  # F5
        ("\x1b", ["esc"]),
        ("\x1b[5~\x1b[6~\x1b[H\x1b[F", ["pageup", "pagedown", "home", "end"]),
        ("\x7f\t\x01", ["backspace", "tab"]),  # ctrl-a: not a key zot sends
    ],
)
def test_a_burst_is_every_key_in_order(sent, keys):
    assert split_keys(sent) == keys
