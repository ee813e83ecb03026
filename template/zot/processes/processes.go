// Package processes makes sure nothing a handler starts outlives the
// extension. At start the extension puts ZOT_EXT_RUN=<its pid>.<a random
// number> into its environment, so every process it starts carries it, and
// so do their children and the ones they leave running in the background.
// When zot stops the extension (shutdown, or the end of stdin), StopAll ends
// each process that carries it. A program meant to outlive the extension is
// started without it: env -u ZOT_EXT_RUN setsid PROGRAM.
//
// This package comes from the template, and `copier update` brings its fixes.
package processes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// runVariable marks the processes of a run of the extension.
const runVariable = "ZOT_EXT_RUN"

// runMark is this run's value of ZOT_EXT_RUN.
var runMark = fmt.Sprintf("%d.%016x", os.Getpid(), rand.Uint64())

// commands counts the commands Command made, to mark each apart.
var commands atomic.Int64

// init marks the processes started from here, before hello.
func init() { _ = os.Setenv(runVariable, runMark) }

// Command is exec.CommandContext for a tool call: once ctx is done (zot
// cancelled the call, or the handler returned), the command is stopped with
// every process it started, even one it left running in the background. It
// runs in a process group of its own. Add to its Env rather than replace it:
// its ZOT_EXT_RUN tells its processes apart.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	mark := runMark + "/" + strconv.FormatInt(commands.Add(1), 10)
	cmd.Env = append(os.Environ(), runVariable+"="+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group this call made: its first process has not been waited for.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	context.AfterFunc(ctx, func() { stopMarked(mark) })
	return cmd
}

// StopAll stops what the handlers started: every process that carries
// this run's ZOT_EXT_RUN. It takes 0.5 s at most (zot waits 2 s for the
// extension to exit).
func StopAll() {
	if left := stopMarked(runMark); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "killed the processes still running after 0.5 s: %v\n", left)
	}
}

// stopMarked sends SIGTERM to each process that carries mark (see marked),
// then SIGKILL to those still there after 0.5 s, which it returns.
func stopMarked(mark string) []int {
	signalled := map[int]bool{}
	deadline := time.Now().Add(500 * time.Millisecond)
	for empty := 0; ; {
		pids := marked(mark)
		if len(pids) == 0 {
			// A process in the middle of exec reads as unmarked for a
			// moment: none found twice, 10 ms apart, is none.
			if empty++; empty == 2 {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		empty = 0
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return pids
		}
		for _, pid := range pids {
			if !signalled[pid] {
				signalled[pid] = true
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

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
	children := map[int][]int{}
	for line := range strings.Lines(string(out)) {
		var pid, ppid int
		var stat string
		_, err := fmt.Sscan(line, &pid, &ppid, &stat)
		if err == nil && pid != ps.Process.Pid && !strings.HasPrefix(stat, "Z") {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var found []int
	for todo := []int{root}; len(todo) > 0; {
		next := children[todo[len(todo)-1]]
		todo = append(todo[:len(todo)-1], next...)
		found = append(found, next...)
	}
	return found
}
