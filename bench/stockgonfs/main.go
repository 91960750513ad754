// Command stockgonfs is go-nfs's stock server as its example/osnfs builds it
// (osfs, NullAuthHandler, CachingHandler), with one change: a handle cache
// of 1<<20 entries instead of 1,024, so that a benchmark listing thousands
// of entries measures go-nfs's work rather than its stale-handle errors.
// It exists only as the comparison point of `make bench`.
//
//	stockgonfs DIR ADDR
package main

import (
	"fmt"
	"net"
	"os"

	"github.com/go-git/go-billy/v5/osfs"
	gonfs "github.com/willscott/go-nfs"
	gonfshelpers "github.com/willscott/go-nfs/helpers"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: stockgonfs DIR ADDR")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h := gonfshelpers.NewCachingHandler(gonfshelpers.NewNullAuthHandler(osfs.New(os.Args[1])), 1<<20)
	if err := gonfs.Serve(l, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
