package main

import (
	"flag"
	"os"
	"path/filepath"

	"github.com/gitnfs/gitnfs/bench/internal/bigtree"
)

var bigTreeRepo = flag.String("bigtree", "", "the 1.1M-entry tree made by `go run ./bench/bigtree DIR`, to reuse instead of making it in the run")

// bigTree is issue 23's 1.1M-entry tree (100,000 directories of 10 files in
// 100 groups, one commit from git fast-import; bench/internal/bigtree), made
// once a run in work and shared by every row and by -against. Making it
// takes about 80 s and 250 MiB (git fast-import) on the 2-core machine;
// the pack is about 107 MB, 1,100,102 objects. By hand:
// `go run ./bench/bigtree DIR`.
func bigTree(work string) (repo string, err error) {
	if *bigTreeRepo != "" {
		return *bigTreeRepo, nil
	}
	repo = filepath.Join(work, "bigtree")
	if _, err := os.Stat(repo); err == nil { // made by an earlier row (-against)
		return repo, nil
	}
	return repo, bigtree.Full.Make(repo)
}
