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
	// The background sleep may still be starting (its environ reads empty
	// while it execs): look again for a while.
	for deadline := time.Now().Add(2 * time.Second); len(marked(runMark)) != 2; {
		if time.Now().After(deadline) {
			t.Fatalf("processes of this run: %v, want the two sleeps", marked(runMark))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := child.Wait(); err == nil {
		t.Error("the child ran to its end")
	}
	for deadline := time.Now().Add(2 * time.Second); len(marked(runMark)) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("still running 2 s after the call ended: %v", marked(runMark))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopAllEndsWhatTheRunStarted(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("finding what a command left running needs /proc")
	}
	if err := Command(context.Background(), "sh", "-c", "sleep 30 &").Run(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); len(marked(runMark)) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("processes of this run: %v, want the background sleep", marked(runMark))
		}
		time.Sleep(10 * time.Millisecond)
	}
	StopAll()
	if left := marked(runMark); len(left) > 0 {
		t.Errorf("still running after StopAll: %v", left)
	}
}
