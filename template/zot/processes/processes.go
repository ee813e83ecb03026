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
// Windows has no process groups and no way to read another process's
// environment: there a command's programs are its process tree, terminated
// at once (there is no SIGTERM), and StopAll ends every process below the
// extension. A process whose parent has exited (one a program left running
// in the background) is no longer below anything, and is not found there:
// that is also how a program outlives the extension on Windows.
//
// This package comes from the template, and `copier update` brings its fixes.
package processes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
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
// /proc (macOS, Windows), stop only has each command's process group (on
// Windows its process tree) killed, and does not wait.
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
	cmd.SysProcAttr = newGroup()
	cmd.Cancel = func() error {
		stopMarked(mark)
		// What is left of the group this call made, or on Windows of its
		// tree (all of it without /proc): its first process has not been
		// waited for.
		return killGroup(cmd.Process)
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

// process is a running process as a list of them (ps, a snapshot) gives it.
type process struct {
	pid, parent int
	created     time.Time // zero where the list does not say
}

// descendants lists the processes below root in procs, each after its
// parent. A process counts as a child only if it was not created before its
// parent: an older one names an earlier process that had the same pid
// (Windows reuses pids, and keeps a process's parent id once its parent has
// exited).
func descendants(procs []process, root process) []process {
	children := map[int][]process{}
	for _, p := range procs {
		children[p.parent] = append(children[p.parent], p)
	}
	var found []process
	seen := map[int]bool{root.pid: true}
	for todo := []process{root}; len(todo) > 0; {
		parent := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, child := range children[parent.pid] {
			if !seen[child.pid] && !child.created.Before(parent.created) {
				seen[child.pid] = true
				found = append(found, child)
				todo = append(todo, child)
			}
		}
	}
	return found
}
