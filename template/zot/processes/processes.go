// Package processes makes sure nothing a handler starts outlives the
// extension. At start the extension puts ZOT_EXT_RUN=<its pid>.<a random
// number> into its environment, so every process it starts carries it, and
// so do their children and the ones they leave running in the background.
// When zot stops the extension (shutdown, or the end of stdin), StopAll ends
// each process that carries it. A program meant to outlive the extension is
// started without it: env -u ZOT_EXT_RUN setsid PROGRAM.
//
// A tool call's programs end with the call: Command starts one, and
// CallContext, which schema.Checked calls around a tool's handler, stops
// what the handler started before its result goes out.
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// runVariable marks the processes of a run of the extension.
const runVariable = "ZOT_EXT_RUN"

// runMark is this run's value of ZOT_EXT_RUN.
var runMark = fmt.Sprintf("%d.%016x", os.Getpid(), rand.Uint64())

// marks counts the marks handed out, to tell each call and command apart.
var marks atomic.Int64

// init marks the processes started from here, before hello.
func init() { _ = os.Setenv(runVariable, runMark) }

// newMark is a mark of its own under parent: parent/N.
func newMark(parent string) string {
	return parent + "/" + strconv.FormatInt(marks.Add(1), 10)
}

// call is what CallContext keeps in its context: the call's mark, under
// which each of its commands gets one of its own, and the commands made.
type call struct {
	mark     string
	mu       sync.Mutex
	commands []func() bool // each one's stop once ctx is done (AfterFunc)
	ended    bool
}

type callKey struct{}

// CallContext returns a context for a tool call's handler, and stop, which
// ends the context and what Command started with it (or with a context made
// from it): each program with every process it started, SIGTERM first and
// SIGKILL 0.5 s later. stop returns once they are gone: call it before the
// result goes out, as schema.Checked does for the handler it wraps. It
// costs nothing when the handler started no program. Where there is no
// /proc, stop only has each command's process group killed, and does not
// wait.
func CallContext(ctx context.Context) (context.Context, func()) {
	c := &call{mark: newMark(runMark)}
	ctx, cancel := context.WithCancel(context.WithValue(ctx, callKey{}, c))
	return ctx, func() {
		c.mu.Lock()
		commands := c.commands
		c.commands, c.ended = nil, true
		c.mu.Unlock()
		if len(commands) > 0 {
			for _, stop := range commands {
				stop() // the look below covers what each would stop
			}
			stopMarked(c.mark)
		}
		cancel() // exec kills the group of a command not waited for
	}
}

// Command is exec.CommandContext for a tool call: once ctx is done (zot
// cancelled the call, or a timeout of the handler's own, from
// context.WithTimeout, fired), the command is stopped with every process it
// started, even one that called setsid or that it left running in the
// background, and Wait (Run, Output) returns once they are gone. Under a
// CallContext (schema.Checked gives the handler one), they are stopped when
// the handler returns, before its result is sent; under the runtime's
// context alone, right after the result. It runs in a process group of its
// own. Add to its Env rather than replace it: its ZOT_EXT_RUN tells its
// processes apart. A program meant to outlive the call, and end with the
// extension, is started with exec.Command.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	c, _ := ctx.Value(callKey{}).(*call)
	parent := runMark
	if c != nil {
		parent = c.mark
	}
	mark := newMark(parent)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), runVariable+"="+mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		stopMarked(mark)
		// What is left of the group this call made (all of it without
		// /proc): its first process has not been waited for.
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	// What it left running once it has exited, Cancel no longer reaches.
	stop := context.AfterFunc(ctx, func() { stopMarked(mark) })
	if c != nil {
		c.mu.Lock()
		if !c.ended {
			c.commands = append(c.commands, stop)
		}
		c.mu.Unlock()
	}
	return cmd
}

// StopAll stops what the handlers started: every process that carries
// this run's ZOT_EXT_RUN. It takes about 0.6 s at most (zot waits 2 s for
// the extension to exit).
func StopAll() {
	if left := stopMarked(runMark); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "killed the processes still running after 0.5 s: %v\n", left)
	}
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
