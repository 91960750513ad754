//go:build race

package nfs_test

// Under the race detector every byte the load test checks costs a hundred
// times more: the load test runs smaller (make race stays minutes, not tens).
func init() { raceEnabled = true }
