"""The extension's processes on Windows, which has no process groups and no
/proc: a snapshot of every process with its parent (the toolhelp API), and
each one's creation time, since Windows reuses the pid of a process that
has exited. Imported everywhere, called on Windows only (ctypes.WinDLL is
Windows')."""

from __future__ import annotations

import ctypes
import functools
from ctypes import wintypes
from typing import Callable, NamedTuple

SNAPPROCESS = 0x2  # CreateToolhelp32Snapshot: processes
QUERY_LIMITED_INFORMATION = 0x1000  # OpenProcess: enough for GetProcessTimes
TERMINATE = 0x0001  # OpenProcess: enough for TerminateProcess
INVALID_HANDLE = ctypes.c_void_p(-1).value


class Entry(ctypes.Structure):
    """PROCESSENTRY32W: what the snapshot says of one process."""

    _fields_ = [
        ("dwSize", wintypes.DWORD),
        ("cntUsage", wintypes.DWORD),
        ("th32ProcessID", wintypes.DWORD),
        ("th32DefaultHeapID", ctypes.c_size_t),
        ("th32ModuleID", wintypes.DWORD),
        ("cntThreads", wintypes.DWORD),
        ("th32ParentProcessID", wintypes.DWORD),
        ("pcPriClassBase", wintypes.LONG),
        ("dwFlags", wintypes.DWORD),
        ("szExeFile", wintypes.WCHAR * 260),
    ]


class Found(NamedTuple):
    pid: int
    created: int  # 100 ns ticks since 1601, as Windows keeps it
    name: str


def filetime(seconds: float) -> int:
    """A time.time() as Windows keeps times: 100 ns ticks since 1601."""
    return int((seconds + 11_644_473_600) * 10_000_000)


@functools.cache  # once: the cancel checks poll every 30 ms
def kernel32():
    dll = ctypes.WinDLL("kernel32", use_last_error=True)
    dll.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    dll.CreateToolhelp32Snapshot.argtypes = [wintypes.DWORD, wintypes.DWORD]
    dll.Process32FirstW.argtypes = [wintypes.HANDLE, ctypes.POINTER(Entry)]
    dll.Process32NextW.argtypes = [wintypes.HANDLE, ctypes.POINTER(Entry)]
    dll.OpenProcess.restype = wintypes.HANDLE
    dll.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    dll.CloseHandle.argtypes = [wintypes.HANDLE]
    times = [ctypes.POINTER(wintypes.FILETIME)] * 4
    dll.GetProcessTimes.argtypes = [wintypes.HANDLE, *times]
    dll.TerminateProcess.argtypes = [wintypes.HANDLE, wintypes.UINT]
    return dll


def snapshot() -> list[tuple[int, int, str]]:
    """(pid, parent's pid, program name) of every process; [] when Windows
    gives no snapshot."""
    dll = kernel32()
    handle = dll.CreateToolhelp32Snapshot(SNAPPROCESS, 0)
    if not handle or handle == INVALID_HANDLE:
        return []
    entry = Entry()
    entry.dwSize = ctypes.sizeof(Entry)
    found = []
    try:
        more = dll.Process32FirstW(handle, ctypes.byref(entry))
        while more:
            found.append(
                (entry.th32ProcessID, entry.th32ParentProcessID, entry.szExeFile)
            )
            more = dll.Process32NextW(handle, ctypes.byref(entry))
    finally:
        dll.CloseHandle(handle)
    return found


def created(pid: int) -> int | None:
    """When process `pid` was created; None when it is gone (or not ours to ask)."""
    dll = kernel32()
    handle = dll.OpenProcess(QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return None
    try:
        return creation_time(dll, handle)
    finally:
        dll.CloseHandle(handle)


def creation_time(dll, handle) -> int | None:
    times = [wintypes.FILETIME() for _ in range(4)]
    if not dll.GetProcessTimes(handle, *(ctypes.byref(t) for t in times)):
        return None
    return times[0].dwHighDateTime << 32 | times[0].dwLowDateTime


def descendants(
    root: int,
    root_created: int,
    entries: list[tuple[int, int, str]],
    created_of: Callable[[int], int | None],
) -> list[Found]:
    """The processes below `root`, by parent pid: a child is one created no
    earlier than its parent (an older process with that parent pid had
    another parent, whose pid was reused). Windows keeps a process's parent
    pid when the parent exits: root's children are found after root exited,
    not those of a process between them that did."""
    children: dict[int, list[tuple[int, str]]] = {}
    for pid, parent, name in entries:
        if pid != parent:  # the idle process is its own parent
            children.setdefault(parent, []).append((pid, name))
    found, queue, seen = [], [(root, root_created)], {root}
    while queue:
        parent, parent_created = queue.pop()
        for pid, name in children.get(parent, []):
            when = created_of(pid)
            if when is not None and when >= parent_created and pid not in seen:
                seen.add(pid)
                found.append(Found(pid, when, name))
                queue.append((pid, when))
    return found


def terminate(pid: int, when: int) -> None:
    """End process `pid` if it is still the one created at `when`."""
    dll = kernel32()
    handle = dll.OpenProcess(TERMINATE | QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return
    try:
        if creation_time(dll, handle) == when:
            dll.TerminateProcess(handle, 1)
    finally:
        dll.CloseHandle(handle)
