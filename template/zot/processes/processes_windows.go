//go:build windows

// Windows: no process groups, and no reading another process's environment.
// A command's programs are its process tree, found in a snapshot of the
// running processes by their parent ids.

package processes

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

const (
	// The access right to read a process's times and exit code, granted
	// on more processes than PROCESS_QUERY_INFORMATION (syscall has no name
	// for it).
	processQueryLimitedInformation = 0x1000
	// What GetExitCodeProcess says of a process still running.
	stillActive = 259
)

// newGroup has a command start a process group of its own, which a Ctrl-C
// typed in zot's console does not reach. Such a group is for console
// signals only: it does not gather the command's processes.
func newGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup terminates the command's process p and every process below it.
func killGroup(p *os.Process) error {
	err := stopTree(p.Pid)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return p.Kill() // no snapshot: the process alone, by exec's handle
	}
	return err
}

// stopMarked terminates the processes that carry mark, as far as Windows
// finds them: it cannot read their environments, so it finds those of the
// whole run only, as every process below this one. None is given time to
// end on its own, so none is returned as killed late.
func stopMarked(mark string) (killed []int) {
	if mark == runMark {
		_ = stopTree(os.Getpid())
	}
	return nil
}

// stopTree terminates the processes below pid, and pid itself unless it is
// this process. pid must be this process or a child of it: for another
// one, or one that has exited, it does nothing and returns
// os.ErrProcessDone. There is no SIGTERM to ask first: each process is
// terminated at once, with exit code 1 as os.Process.Kill does. What the
// terminated ones started meanwhile is looked for again, for 0.5 s at most;
// until then, the handles kept to them keep their pids from being reused.
func stopTree(pid int) error {
	procs, err := snapshot()
	if err != nil {
		return err
	}
	self, ok := find(procs, os.Getpid())
	if !ok {
		return errors.New("this process is not in the snapshot")
	}
	root := self
	if pid != self.pid {
		// A child of this one: never a process that took the pid of one
		// that has exited, nor one that is not below this process.
		if root, ok = find(descendants(procs, self), pid); !ok || root.parent != self.pid {
			return os.ErrProcessDone
		}
	}
	var held []process // terminated ones, with their handles open
	var handles []syscall.Handle
	defer func() {
		for _, h := range handles {
			_ = syscall.CloseHandle(h)
		}
	}()
	tried := map[process]bool{}
	deadline := time.Now().Add(500 * time.Millisecond)
	targets := descendants(procs, root) // each after its parent
	if root != self {
		targets = append([]process{root}, targets...)
	}
	for len(targets) > 0 {
		for _, p := range targets {
			tried[p] = true
			if h, ok := terminate(p); ok {
				held = append(held, p)
				handles = append(handles, h)
			}
		}
		// TerminateProcess only starts the end: wait for it.
		for _, h := range handles {
			wait := max(time.Until(deadline).Milliseconds(), 0)
			_, _ = syscall.WaitForSingleObject(h, uint32(wait))
		}
		if time.Now().After(deadline) {
			break
		}
		// The snapshot lists none that has exited: the held ones still
		// lead to the children they started.
		if procs, err = snapshot(); err != nil {
			break
		}
		targets = nil
		for _, p := range descendants(append(procs, held...), root) {
			if !tried[p] {
				targets = append(targets, p)
			}
		}
	}
	return nil
}

// find is the process pid in procs.
func find(procs []process, pid int) (process, bool) {
	for _, p := range procs {
		if p.pid == pid {
			return p, true
		}
	}
	return process{}, false
}

// snapshot lists the processes running, those whose creation time can be
// read (every one of this user's).
func snapshot() ([]process, error) {
	snap, err := syscall.CreateToolhelp32Snapshot(syscall.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.CloseHandle(snap)
	var procs []process
	var entry syscall.ProcessEntry32
	entry.Size = uint32(unsafe.Sizeof(entry))
	for err = syscall.Process32First(snap, &entry); err == nil; err = syscall.Process32Next(snap, &entry) {
		if created, ok := running(entry.ProcessID); ok {
			procs = append(procs, process{int(entry.ProcessID), int(entry.ParentProcessID), created})
		}
	}
	if !errors.Is(err, syscall.ERROR_NO_MORE_FILES) {
		return nil, err
	}
	return procs, nil
}

// running is when the process pid was created, if it is still running.
func running(pid uint32) (time.Time, bool) {
	h, err := syscall.OpenProcess(processQueryLimitedInformation, false, pid)
	if err != nil {
		return time.Time{}, false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if syscall.GetExitCodeProcess(h, &code) != nil || code != stillActive {
		return time.Time{}, false
	}
	return created(h)
}

// created is when the process of handle h was created.
func created(h syscall.Handle) (time.Time, bool) {
	var creation, exit, kernel, user syscall.Filetime
	if syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return time.Time{}, false
	}
	return time.Unix(0, creation.Nanoseconds()), true
}

// terminate terminates p, unless its pid now names another process, and
// returns a handle to it, which keeps the pid from being reused while open.
// One that has exited meanwhile is held all the same: its children are
// still below it.
func terminate(p process) (syscall.Handle, bool) {
	const access = syscall.PROCESS_TERMINATE | syscall.SYNCHRONIZE | processQueryLimitedInformation
	h, err := syscall.OpenProcess(access, false, uint32(p.pid))
	if err != nil {
		return 0, false
	}
	if when, ok := created(h); !ok || !when.Equal(p.created) {
		_ = syscall.CloseHandle(h)
		return 0, false
	}
	_ = syscall.TerminateProcess(h, 1) // fails on one that has exited
	return h, true
}
