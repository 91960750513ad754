//go:build race

package nfs

// Under the race detector sync.Pool drops a quarter of what it is given,
// on purpose: the tests that count a pool's allocations skip.
func init() { racePools = true }
