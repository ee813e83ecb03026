// Unit tests of the process helper, which comes from the template: those
// that run on every system. The programs they start are this test binary
// itself (see TestMain); processes_unix_test.go has the ones with sh.
package processes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// program says what the test binary does when a test starts it: "tree"
// starts a child ("sleep") that writes to the same stdout, then waits; the
// child writes a line once it runs, then waits. Both end after a minute.
// startedMark is the ZOT_EXT_RUN "tree" was started with, which the child
// gets, as it would from any other program: this package's init gave "tree"
// a mark of its own.
const (
	program     = "ZOT_PROCESSES_TEST_PROGRAM"
	startedMark = "ZOT_PROCESSES_TEST_MARK"
)

func TestMain(m *testing.M) {
	switch os.Getenv(program) {
	case "tree":
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		child := exec.Command(self)
		child.Env = append(os.Environ(), program+"=sleep", runVariable+"="+os.Getenv(startedMark))
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		time.Sleep(time.Minute)
	case "sleep":
		fmt.Println("running")
		time.Sleep(time.Minute)
	default:
		os.Exit(m.Run())
	}
}

func TestCancellingACommandEndsItsProcessTree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := Command(ctx, executable(t))
	tree := startTree(t, cmd)
	cancel() // as tool_cancel does
	if err := cmd.Wait(); err == nil {
		t.Error("the program ran to its end")
	}
	waitUntilGone(t, tree)
}

func TestStopAllEndsAPlainCommandsProcessTree(t *testing.T) {
	cmd := exec.Command(executable(t))
	tree := startTree(t, cmd)
	StopAll()
	waitUntilGone(t, tree)
	_ = cmd.Wait()
}

func TestAStopWithNothingStartedEndsTheContextOnly(t *testing.T) {
	ctx, stop := CallContext(context.Background())
	stop()
	if ctx.Err() == nil {
		t.Error("the call's context is not done once stop returned")
	}
	stop() // a second stop does nothing
}

func TestACommandsMarkIsItsOwnUnderItsCalls(t *testing.T) {
	if got := os.Getenv(runVariable); got != runMark {
		t.Fatalf("%s=%q, want this run's mark %q", runVariable, got, runMark)
	}
	ctx, stop := CallContext(context.Background())
	defer stop()
	marks := []string{
		mark(Command(context.Background(), "x")),
		mark(Command(ctx, "x")),
		mark(Command(ctx, "x")),
	}
	for i, levels := range []int{1, 2, 2} {
		rest, ok := strings.CutPrefix(marks[i], runMark+"/")
		if !ok || strings.Count(rest, "/") != levels-1 {
			t.Errorf("command %d has the mark %q, want %d level(s) under %q", i, marks[i], levels, runMark)
		}
	}
	if marks[1] == marks[2] || !strings.HasPrefix(marks[2], marks[1][:strings.LastIndex(marks[1], "/")+1]) {
		t.Errorf("the commands of one call have the marks %q and %q, want two of their own under the call's", marks[1], marks[2])
	}
}

func TestDescendantsFollowParentIDsButNotStaleOnes(t *testing.T) {
	at := func(second int64) time.Time { return time.Unix(1000+second, 0) }
	root := process{pid: 10, parent: 1, created: at(0)}
	procs := []process{
		{pid: 1, parent: 12, created: at(-9)}, // 12 is a later process than its parent 1
		root,
		{pid: 11, parent: 10, created: at(1)},
		{pid: 12, parent: 11, created: at(2)},
		{pid: 13, parent: 10, created: at(0)},  // in the same tick as its parent
		{pid: 20, parent: 10, created: at(-5)}, // older than 10: its parent had the pid before
		{pid: 21, parent: 20, created: at(3)},
		{pid: 30, parent: 1, created: at(1)},
	}
	found := descendants(procs, root)
	var pids []int
	for i, p := range found {
		pids = append(pids, p.pid)
		if p.parent != root.pid && !slices.ContainsFunc(found[:i], func(q process) bool { return q.pid == p.parent }) {
			t.Errorf("%d is listed before its parent %d: %v", p.pid, p.parent, found)
		}
	}
	slices.Sort(pids)
	if !slices.Equal(pids, []int{11, 12, 13}) {
		t.Errorf("below 10: %v, want [11 12 13]", pids)
	}
}

func TestDescendantsEndOnALoopOfParentIDs(t *testing.T) {
	// ps gives no creation times, and reused pids can make a loop.
	procs := []process{{pid: 2, parent: 3}, {pid: 3, parent: 2}, {pid: 4, parent: 3}}
	var pids []int
	for _, p := range descendants(procs, process{pid: 2}) {
		pids = append(pids, p.pid)
	}
	slices.Sort(pids)
	if !slices.Equal(pids, []int{3, 4}) {
		t.Errorf("below 2: %v, want [3 4]", pids)
	}
}

// mark is a command's ZOT_EXT_RUN: the last one of its environment wins.
func mark(cmd *exec.Cmd) string {
	var found string
	for _, entry := range cmd.Env {
		if value, ok := strings.CutPrefix(entry, runVariable+"="); ok {
			found = value
		}
	}
	return found
}

// executable is the test binary, which TestMain turns into a program.
func executable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// startTree starts cmd, the test binary, as "tree", and returns what its
// processes write to their stdout, once its child runs. That reads to its
// end once none of them is left to hold the pipe.
func startTree(t *testing.T, cmd *exec.Cmd) io.Reader {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	cmd.Env = cmd.Environ()
	cmd.Env = append(cmd.Env, program+"=tree", startedMark+"="+mark(cmd))
	cmd.Stdout = w
	err = cmd.Start()
	_ = w.Close() // the processes hold their own copies
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(r)
	if line, err := out.ReadString('\n'); err != nil {
		t.Fatalf("the child wrote %q and then: %v", line, err)
	}
	return out
}

// waitUntilGone waits up to 5 s for the processes writing to out to end.
func waitUntilGone(t *testing.T, out io.Reader) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, out)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("a process of the tree still runs 5 s after it was stopped")
	}
}
