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
