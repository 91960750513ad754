package tree

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// TestPanicsBecomeErrors guards the recovery around go-git calls and in
// singleflight: a panic is an error for the caller and for every waiter.
func TestPanicsBecomeErrors(t *testing.T) {
	s := NewStore(memory.NewStorage(), Options{})
	err := s.locked("open 1234", func() error { panic("corrupt pack") })
	if err == nil || !strings.Contains(err.Error(), "open 1234") || !strings.Contains(err.Error(), "corrupt pack") {
		t.Errorf("locked(panic) = %v", err)
	}
	// The mutex was released.
	if err := s.locked("again", func() error { return nil }); err != nil {
		t.Error(err)
	}

	var f flight[int]
	h := plumbing.NewHash("1234567890123456789012345678901234567890")
	release := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.do(h, func() (int, error) { <-release; panic("boom") })
		}()
	}
	close(release)
	wg.Wait()
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("flight waiter got %v, want the panic as an error", err)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	if errors.Is(ErrNotDir, ErrNotFound) || errors.Is(ErrNotFound, ErrNotDir) {
		t.Error("ErrNotDir and ErrNotFound must be distinct (ENOTDIR vs ENOENT)")
	}
	if !errors.Is(errObjectNotFound, ErrNotFound) || !errors.Is(errObjectNotFound, plumbing.ErrObjectNotFound) {
		t.Error("errObjectNotFound must match both not-found errors")
	}
}
