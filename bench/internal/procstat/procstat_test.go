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
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ { // bounded: 300 ms of spinning
	}
	got, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if d := got - want; got < 100*time.Millisecond || d > 50*time.Millisecond || d < -50*time.Millisecond {
		t.Errorf("CPU = %v, getrusage says %v", got, want)
	}
}

func TestCPUOfNoSuchProcessIsAnError(t *testing.T) {
	if _, err := CPU(1 << 30); err == nil {
		t.Error("CPU of pid 1<<30: no error")
	}
}
