package procstat

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// CPU must agree with the kernel's own account of this process (getrusage)
// to within a few clock ticks, after enough work to be well above a tick.
func TestCPUAgreesWithGetrusage(t *testing.T) {
	// Spin until the process has used 200 ms (20 ticks), for at most 10 s
	// on a loaded machine.
	deadline := time.Now().Add(10 * time.Second)
	for selfCPU() < 200*time.Millisecond && time.Now().Before(deadline) {
	}
	got, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := selfCPU()
	if d := got - want; want < 200*time.Millisecond || d > 30*time.Millisecond || d < -30*time.Millisecond {
		t.Errorf("CPU = %v, getrusage says %v", got, want)
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCPUOfNoSuchProcessIsAnError(t *testing.T) {
	if _, err := CPU(1 << 30); err == nil {
		t.Error("CPU of pid 1<<30: no error")
	}
}

// Threads must see this process's own work on a CPU (at nanosecond
// resolution: agreeing with getrusage within a few ticks) and count the
// context switches a goroutine blocked in a sleep makes its thread do.
func TestThreadsSeesCPUAndSwitches(t *testing.T) {
	before, err := Threads(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for start := selfCPU(); selfCPU()-start < 200*time.Millisecond && time.Now().Before(deadline); {
	}
	for i := 0; i < 20; i++ {
		time.Sleep(time.Millisecond) // every thread idle: each sleep parks one
	}
	after, err := Threads(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.CPU - before.CPU; d < 170*time.Millisecond {
		t.Errorf("Threads saw %v of CPU across a 200 ms spin", d)
	}
	if got, want := after.CPU, selfCPU(); got-want > 30*time.Millisecond || want-got > 30*time.Millisecond {
		t.Errorf("Threads CPU = %v, getrusage says %v", got, want)
	}
	if n := after.Switches - before.Switches; n < 20 {
		t.Errorf("%d context switches across 20 sleeps", n)
	}
}

func TestSwitchesOfAStatusFile(t *testing.T) {
	n, err := switches([]byte("Name:\tx\nvoluntary_ctxt_switches:\t139\nnonvoluntary_ctxt_switches:\t 135\n"))
	if err != nil || n != 274 {
		t.Errorf("switches = %d, %v; want 274", n, err)
	}
	if _, err := switches([]byte("Name:\tx\nvoluntary_ctxt_switches:\t139\n")); err == nil {
		t.Error("a status without nonvoluntary_ctxt_switches: no error")
	}
}
