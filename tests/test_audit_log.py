"""Two zot sessions append to one audit log at once: no line is ever torn,
in any language (each line reaches the file in one write)."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest
from conftest import LANGUAGES
from host import ExtensionProcess


@pytest.mark.parametrize("language", LANGUAGES)
def test_two_sessions_appending_to_one_audit_log_never_tear_a_line(projects, tmp_path, language):
    """Two extensions append 600 events of 5 to 20 KiB each to one log."""
    project = projects.get(language, ["events"])
    rnd = random.Random(23)
    sizes = [rnd.randint(5 << 10, 20 << 10) for _ in range(1200)]
    log = tmp_path / "demo-ext-events.jsonl"

    def events(ext: ExtensionProcess, first: int) -> None:
        for i in range(first, first + 600):
            text = f"event {i} " + 'é ab"\\\t' * (sizes[i] // 8)
            ext.send({"type": "event", "event": "turn_end", "text": text})

    with (
        ExtensionProcess(project, data_dir=tmp_path) as one,
        ExtensionProcess(project, data_dir=tmp_path) as two,
    ):
        one.handshake()
        two.handshake()
        writers = [
            threading.Thread(target=events, args=(ext, first))
            for ext, first in ((one, 0), (two, 600))
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        deadline = time.monotonic() + 120
        while not log.exists() or log.read_bytes().count(b"\n") < 1200:
            assert time.monotonic() < deadline, "not every event reached the log"
            time.sleep(0.1)
        assert one.shutdown() == 0 and two.shutdown() == 0
    lines = log.read_bytes().split(b"\n")
    assert lines.pop() == b""
    texts = []
    for number, text in enumerate(lines):
        try:
            texts.append(json.loads(text)["text"])
        except ValueError:
            pytest.fail(f"line {number + 1} of {len(lines)} is torn: {text[:60]!r}...")
    assert sorted(int(t.split()[1]) for t in texts) == list(range(1200))
