package overlay

// Fsyncs is how many fsyncs f did for changes, WRITEs and COMMITs (disk.go).
func Fsyncs(f *FS) uint64 { return f.disk.fsyncs.Load() }
