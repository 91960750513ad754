package overlay

import (
	"os"
	"sync/atomic"
)

// disk is the one way the overlay puts bytes on stable storage while it
// serves: every fsync a change, a WRITE or a COMMIT waits for goes through
// it, so that Options.Async skips them all in one place and a test can count
// them. The fsyncs of opening DIR (overlay.json, a compacted journal) and of
// Close do not go through it: they are not on any reply's path, and they
// are what makes an async overlay durable once it is closed.
type disk struct {
	async  bool
	fsyncs atomic.Uint64 // fsyncs done (none when async)
}

// sync puts f's bytes on stable storage, unless async. The bytes were
// written (write(2)) before: async only skips waiting for the disk.
func (d *disk) sync(f *os.File) error {
	if d.async {
		return nil
	}
	d.fsyncs.Add(1)
	return f.Sync()
}
