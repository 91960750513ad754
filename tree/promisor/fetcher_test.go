package promisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testremote"
	"github.com/gitnfs/gitnfs/stats"
)

// TestHungFetchIsNotRetried: a batch whose git fetch was killed at its
// timeout (a remote that accepts and then hangs) fails without the retry
// that a failure naming no object gets (fetchBatch): the read waits one
// timeout, not two. The git in PATH hangs every fetch.
func TestHungFetchIsNotRetried(t *testing.T) {
	testremote.WrapGit(t, `case " $* " in *" fetch "*) exec sleep 60 ;; esac`)
	st := new(stats.Internal)
	f := New(Options{GitDir: t.TempDir(), Remotes: []Remote{{Name: "origin", URL: "git://127.0.0.1:9/unused"}},
		Stats: st, FetchTimeout: 300 * time.Millisecond})
	defer f.Close()
	want, prefetched := plumbing.NewHash(strings.Repeat("1", 40)), plumbing.NewHash(strings.Repeat("2", 40))
	tk := f.Fetch(want, func() []plumbing.Hash { return []plumbing.Hash{prefetched} })
	select {
	case <-tk.Done():
	case <-time.After(time.Minute):
		t.Fatal("the fetch did not end at its timeout")
	}
	if err := tk.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a hung fetch: %v, want its deadline", err)
	}
	if n := st.PromisorFetches.Load(); n != 1 {
		t.Errorf("%d git fetches for a batch whose remote hangs, want 1", n)
	}
}
