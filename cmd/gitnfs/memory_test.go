package main

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

func TestMemoryLimitIsTheCacheSizePlusHeadroom(t *testing.T) {
	none := func(string) string { return "" }
	if got, env := memoryLimit(32<<20, none); env || got != 32<<20+memoryHeadroom {
		t.Errorf("memoryLimit(32MiB) = %d, %v; want %d", got, env, 32<<20+memoryHeadroom)
	}
	if got, _ := memoryLimit(math.MaxInt64-1, none); got != math.MaxInt64 {
		t.Errorf("memoryLimit(near MaxInt64) = %d; want it clamped, not wrapped", got)
	}
	env := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	}
	if _, fromEnv := memoryLimit(32<<20, env); !fromEnv {
		t.Error("a GOMEMLIMIT in the environment was overridden")
	}
}

// TestCacheSizeHelpStatesTheSplit keeps --help and tree.SplitBudget
// saying the same thing.
func TestCacheSizeHelpStatesTheSplit(t *testing.T) {
	usage := newServe().Flags().Lookup("cache-size").Usage
	const total = 1 << 30
	b := tree.SplitBudget(total)
	for _, share := range []struct {
		what string
		got  int64
	}{
		{"inflated blobs 1/2", b.Blobs}, {"decoded trees with their entries' sizes 1/4", b.Trees}, {"delta bases 1/8", b.DeltaBases},
		{"open streams 1/16", b.Streams}, {"go-git's cache 1/32", b.GoGit},
		{"sizes of blobs met one at a time 1/32", b.Sizes},
	} {
		if !strings.Contains(usage, share.what) {
			t.Errorf("--cache-size help does not say %q: %s", share.what, usage)
			continue
		}
		var den int64
		frac := share.what[strings.LastIndex(share.what, "/")+1:]
		for _, c := range frac {
			den = den*10 + int64(c-'0')
		}
		if share.got*den != total {
			t.Errorf("%s: SplitBudget gives %d of %d", share.what, share.got, total)
		}
	}
	if !strings.Contains(usage, "plus 24MiB") || memoryHeadroom != 24<<20 {
		t.Errorf("--cache-size help and memoryHeadroom (%d) disagree: %s", memoryHeadroom, usage)
	}
	if !strings.Contains(usage, "too long for a handle that clients were given (at most 4MiB an export)") || vfs.MaxLongPathBytes != 4<<20 {
		t.Errorf("--cache-size help and vfs.MaxLongPathBytes (%d) disagree: %s", vfs.MaxLongPathBytes, usage)
	}
}

// TestSpareProcessor: serve runs with one processor more than GOMAXPROCS
// would give it and lets as many big reads run at once as it would have
// had; a GOMAXPROCS of the user's is left alone.
func TestSpareProcessor(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	if heavy := spareProcessor(func(string) string { return "" }); heavy != before || runtime.GOMAXPROCS(0) != before+1 {
		t.Errorf("spareProcessor: %d big reads, GOMAXPROCS %d; want %d and %d", heavy, runtime.GOMAXPROCS(0), before, before+1)
	}
	runtime.GOMAXPROCS(before)
	user := func(k string) string {
		if k == "GOMAXPROCS" {
			return "1"
		}
		return ""
	}
	if heavy := spareProcessor(user); heavy != before || runtime.GOMAXPROCS(0) != before {
		t.Errorf("with GOMAXPROCS set by the user: %d big reads, GOMAXPROCS %d; want both %d", heavy, runtime.GOMAXPROCS(0), before)
	}
}
