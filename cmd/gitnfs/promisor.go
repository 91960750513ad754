package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gitnfs/gitnfs/tree/promisor"
)

// partialNote is what serve prints about a partial clone (nothing for any
// other repository): where its missing objects come from, or that they
// will not be fetched.
func partialNote(f *promisor.Fetcher) string {
	if f == nil {
		return ""
	}
	var from []string
	for _, r := range f.Remotes() {
		s := r.String()
		if r.Filter != "" {
			s += ", filter " + r.Filter
		}
		from = append(from, s)
	}
	if f.Offline() {
		return fmt.Sprintf("gitnfs: partial clone of %s: --offline, so objects it does not hold answer I/O errors\n", strings.Join(from, "; "))
	}
	return fmt.Sprintf("gitnfs: partial clone: missing objects are fetched from promisor remote %s\n", strings.Join(from, ", then "))
}

// probeObjectInfo asks the promisor remote, once at start, whether it
// serves object-info, and logs what that means for listings.
func probeObjectInfo(f *promisor.Fetcher, log *slog.Logger) {
	if f == nil || f.Offline() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.ProbeObjectInfo(ctx); err != nil {
		log.Warn("partial clone: the promisor remote did not answer; objects it holds will be fetched when asked for", "err", err)
		return
	}
	if why, none := f.NoObjectInfo(); none {
		log.Warn("partial clone: no promisor remote serves object-info, so a directory's missing files are fetched when it is first listed (sizes need content)", "why", why)
		return
	}
	log.Info("partial clone: sizes come from the promisor remote's object-info", "remotes", strings.Join(f.ObjectInfo(), "; "))
}
