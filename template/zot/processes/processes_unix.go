//go:build !windows

// Linux and macOS: a command runs in a process group of its own, and the
// processes of a run are found by their ZOT_EXT_RUN in /proc, or, without
// /proc (macOS), as the processes below this one that ps lists.

package processes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// newGroup has a command start a process group of its own.
func newGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to the process group that p started.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// stopMarked sends SIGTERM to each process that carries mark (see marked),
// then SIGKILL to those still there after 0.5 s, which it returns. It
// returns once none is left, or 0.1 s after the SIGKILL.
func stopMarked(mark string) (killed []int) {
	if mark != runMark && !hasProc {
		return nil // found only by their mark, in /proc
	}
	signalled := map[int]bool{}
	started := time.Now()
	for empty := 0; ; {
		pids := marked(mark)
		if len(pids) == 0 {
			// A process in the middle of exec reads as unmarked for a
			// moment: none found twice, 10 ms apart, is none.
			if empty++; empty == 2 {
				return killed
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		empty = 0
		late := time.Since(started) > 500*time.Millisecond
		if late && time.Since(started) > 600*time.Millisecond {
			return killed // stuck in the kernel: nothing more to do
		}
		for _, pid := range pids {
			switch {
			case late && !slices.Contains(killed, pid):
				killed = append(killed, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			case !late && !signalled[pid]:
				signalled[pid] = true
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hasProc is whether the processes' environments can be read (not macOS).
var hasProc = func() bool {
	_, err := os.Stat("/proc/self/environ")
	return err == nil
}()

// marked lists the processes whose environment holds ZOT_EXT_RUN=mark or
// mark/..., this one aside. One that has exited reads as empty.
func marked(mark string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil { // no /proc (macOS): the processes below this one
		if mark == runMark {
			return below(os.Getpid())
		}
		return nil
	}
	entry := []byte(runVariable + "=" + mark)
	under := append(entry[:len(entry):len(entry)], '/')
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(environ, entry) {
			continue // gone, another user's, or not marked
		}
		for value := range bytes.SplitSeq(environ, []byte{0}) {
			if bytes.Equal(value, entry) || bytes.HasPrefix(value, under) {
				found = append(found, pid)
				break
			}
		}
	}
	return found
}

// below lists the live processes under root, from ps.
func below(root int) []int {
	ps := exec.Command("ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "stat=")
	out, err := ps.Output()
	if err != nil {
		return nil
	}
	var procs []process
	for line := range strings.Lines(string(out)) {
		var p process
		var stat string
		_, err := fmt.Sscan(line, &p.pid, &p.parent, &stat)
		if err == nil && p.pid != ps.Process.Pid && !strings.HasPrefix(stat, "Z") {
			procs = append(procs, p)
		}
	}
	var found []int
	for _, p := range descendants(procs, process{pid: root}) {
		found = append(found, p.pid)
	}
	return found
}
