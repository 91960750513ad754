// Command bigtree writes issue 23's 1.1M-entry tree (100,000 directories
// of 10 files in 100 groups, one commit) as a bare repository at DIR, the
// same tree the bench rows read:
//
//	go run ./bench/bigtree /tmp/bigtree.git
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/gitnfs/gitnfs/bench/internal/bigtree"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bigtree DIR (a bare repository to create)")
		os.Exit(2)
	}
	start := time.Now()
	if err := bigtree.Full.Make(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bigtree: %d entries in %s, %v\n", bigtree.Full.Entries(), os.Args[1], time.Since(start).Round(time.Millisecond))
}
