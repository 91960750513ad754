package tree

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Abbrev is git's default abbreviation of id (find_unique_abbrev with
// DEFAULT_ABBREV, as `git rev-parse --short` prints it): core.abbrev if
// set, otherwise a length grown with the number of packed objects (7 below
// 16,384), then extended until unique.
func (s *Store) Abbrev(id plumbing.Hash) string {
	hex := id.String()
	n := s.abbrevLen()
	for ; n < len(hex); n++ {
		if _, err := s.Resolve(hex[:n]); !errors.Is(err, ErrAmbiguous) {
			break
		}
	}
	return hex[:n]
}

// abbrevLen is the length Abbrev starts from.
func (s *Store) abbrevLen() int {
	if v, ok := s.config.Get("core", "", "abbrev"); ok {
		switch v = strings.ToLower(v); v {
		case "", "auto":
		case "no", "false", "off":
			return 40
		default:
			if n, err := strconv.Atoi(v); err == nil {
				return min(max(n, 4), 40)
			}
		}
	}
	// repo_approximate_object_count: the objects of every pack (loose
	// objects are not counted), in this object directory and its
	// alternates, the same chain objects are read from.
	var count uint64
	for _, b := range s.backends {
		if b.objDir == "" {
			continue
		}
		idx, _ := filepath.Glob(filepath.Join(b.objDir, "pack", "*.idx"))
		for _, p := range idx {
			count += packCount(p)
		}
	}
	bits := 0
	for c := count; c > 1; c >>= 1 {
		bits++ // msb(count)
	}
	return max((bits+1+1)/2, 7)
}

// packCount reads the object count of a pack index (version 1 or 2): the
// last entry of its fan-out table.
func packCount(path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var hdr [8]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0
	}
	off := int64(255 * 4)
	if hdr[0] == 0xff && string(hdr[1:4]) == "tOc" {
		off += 8
	}
	var b [4]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return 0
	}
	return uint64(binary.BigEndian.Uint32(b[:]))
}
