"""Smoke-test a zot extension by piping one whole zot session through it.

The extension is started the way zot starts it (manifest, exec resolution,
working directory, a process group of its own) and taken through a session:
handshake, registrations, every command and tool, every subscribed event,
the tool-call guard (with the cases in guard-cases.json), junk input, the
cases in smoke.json and shutdown. Every check prints one PASS/FAIL/WARN/SKIP
line. Standard library only; Python 3.9+ on POSIX.
"""
