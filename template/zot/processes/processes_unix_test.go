//go:build !windows

// Unit tests of the process helper on Linux and macOS, with sh, setsid and
// sleep. Each sleep has a length of its own (seconds), which tells its
// processes apart.

package processes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWhatACallStartedIsGoneWhenItsStopReturns(t *testing.T) {
	needProc(t)
	ctx, stop := CallContext(context.Background())
	// A child never waited for, one that called setsid, one left in the
	// background by a shell that has exited, and one under a context made
	// from the call's.
	if err := Command(ctx, "sleep", seconds(301)).Start(); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{"setsid sleep " + seconds(302) + " >/dev/null 2>&1 &", "sleep " + seconds(303) + " >/dev/null 2>&1 &"} {
		if err := Command(ctx, "sh", "-c", script).Run(); err != nil {
			t.Fatal(err)
		}
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := Command(inner, "sleep", seconds(304)).Start(); err != nil {
		t.Fatal(err)
	}
	waitForSleeps(t, seconds(301), seconds(302), seconds(303), seconds(304))
	stop()
	if left := sleeps(seconds(301), seconds(302), seconds(303), seconds(304)); len(left) > 0 {
		t.Errorf("still running once stop returned: %v", left)
	}
	if ctx.Err() == nil {
		t.Error("the call's context is not done once stop returned")
	}
}

func TestAHandlersOwnTimeoutStopsTheWholeTree(t *testing.T) {
	needProc(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cmd := Command(ctx, "sh", "-c", "setsid sleep "+seconds(311)+" >/dev/null 2>&1 & sleep "+seconds(312))
	if err := cmd.Run(); err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Run returned %v with the context %v, want an error after the timeout", err, ctx.Err())
	}
	if left := sleeps(seconds(311), seconds(312)); len(left) > 0 {
		t.Errorf("still running once Run returned: %v", left)
	}
}

func TestCancellingTheCallStopsItsCommandsAndWhatTheyLeftRunning(t *testing.T) {
	needProc(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Command(ctx, "sh", "-c", "sleep "+seconds(321)+" >/dev/null 2>&1 &").Run(); err != nil {
		t.Fatal(err)
	}
	child := Command(ctx, "sh", "-c", "setsid sleep "+seconds(322)+" >/dev/null 2>&1 & sleep "+seconds(323))
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitForSleeps(t, seconds(321), seconds(322), seconds(323))
	cancel() // as tool_cancel does
	if err := child.Wait(); err == nil {
		t.Error("the child ran to its end")
	}
	if left := sleeps(seconds(322), seconds(323)); len(left) > 0 {
		t.Errorf("still running once Wait returned: %v", left)
	}
	// Cancel no longer reaches the shell that has exited: what it left
	// running is stopped right after ctx is done.
	for deadline := time.Now().Add(2 * time.Second); len(sleeps(seconds(321))) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still running 2 s after the call was cancelled: %v", sleeps(seconds(321)))
		}
	}
}

func TestAPlainCommandOutlivesTheCallAndStopAllEndsIt(t *testing.T) {
	needProc(t)
	_, stop := CallContext(context.Background()) // a call whose handler starts it
	plain := exec.Command("sleep", seconds(331))
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = plain.Wait() }()
	waitForSleeps(t, seconds(331))
	stop()
	if len(sleeps(seconds(331))) != 1 {
		t.Fatal("the program meant to outlive the call ended with it")
	}
	StopAll()
	if left := sleeps(seconds(331)); len(left) > 0 {
		t.Errorf("still running after StopAll: %v", left)
	}
}

func TestStopAllEndsWhatTheRunStarted(t *testing.T) {
	needProc(t)
	if err := Command(context.Background(), "sh", "-c", "sleep "+seconds(341)+" >/dev/null 2>&1 &").Run(); err != nil {
		t.Fatal(err)
	}
	waitForSleeps(t, seconds(341))
	StopAll()
	if left := marked(runMark); len(left) > 0 {
		t.Errorf("still running after StopAll: %v", left)
	}
}

// needProc skips a test where processes cannot be found by their mark.
func needProc(t *testing.T) {
	t.Helper()
	if !hasProc {
		t.Skip("finding what a command left running needs /proc")
	}
	t.Cleanup(func() { stopMarked(runMark) })
}

// seconds is a length of sleep no other test binary running beside this one
// uses: n seconds and a fraction, this binary's process id.
func seconds(n int) string { return fmt.Sprintf("%d.%d", n, os.Getpid()) }

// sleeps lists the processes running `sleep LENGTH` for the lengths given,
// found by their command line (zombies, which have exited, aside).
func sleeps(lengths ...string) []string {
	var found []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range paths {
		cmdline, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(cmdline, []byte("sleep\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(path), "stat"))
		if err != nil {
			continue
		}
		// The state follows the command's name, in parentheses.
		state := stat[bytes.LastIndexByte(stat, ')')+2]
		for _, length := range lengths {
			if string(cmdline) == "sleep\x00"+length+"\x00" && state != 'Z' {
				found = append(found, filepath.Base(filepath.Dir(path))+": sleep "+length)
			}
		}
	}
	return found
}

// waitForSleeps waits up to 2 s for one `sleep LENGTH` of each length to run.
func waitForSleeps(t *testing.T, lengths ...string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); len(sleeps(lengths...)) != len(lengths); {
		if time.Now().After(deadline) {
			t.Fatalf("running: %v, want one sleep of each of %s", sleeps(lengths...), strings.Join(lengths, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
