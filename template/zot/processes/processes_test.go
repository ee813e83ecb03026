// Unit tests of the process helper, which comes from the template.
package processes

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestACallsCommandsStopWithItsContextEvenWhatTheyLeftRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("finding what a command left running needs /proc")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Cleanup(func() { stopMarked(runMark) })
	// A background process, whose parent exits at once, and a child.
	if err := Command(ctx, "sh", "-c", "sleep 30 &").Run(); err != nil {
		t.Fatal(err)
	}
	child := Command(ctx, "sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitForMarked(t, 2) // the two sleeps
	cancel()
	if err := child.Wait(); err == nil {
		t.Error("the child ran to its end")
	}
	waitForMarked(t, 0) // the call ended: nothing it started is left
}

func TestStopAllEndsWhatTheRunStarted(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("finding what a command left running needs /proc")
	}
	if err := Command(context.Background(), "sh", "-c", "sleep 30 &").Run(); err != nil {
		t.Fatal(err)
	}
	waitForMarked(t, 1) // the background sleep
	StopAll()
	if left := marked(runMark); len(left) > 0 {
		t.Errorf("still running after StopAll: %v", left)
	}
}

// waitForMarked waits up to 2 s for count processes of this run. One may
// still be starting: its environ reads empty while it execs.
func waitForMarked(t *testing.T, count int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); len(marked(runMark)) != count; {
		if time.Now().After(deadline) {
			t.Fatalf("processes of this run: %v, want %d of them", marked(runMark), count)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
