// Command gitnfs serves a git revision over NFSv3, straight from the object
// store: nothing is checked out.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "gitnfs:", err)
		os.Exit(1)
	}
}

// exitError ends the program with a status and no further message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "gitnfs",
		Short: "Serve a git revision over NFSv3, without checking it out",
		Long: `gitnfs exports one revision of a git repository over NFSv3 on loopback,
straight from the object store: read-only, or writable through an overlay
directory (serve --overlay DIR) that takes every write. The object store is
never written, except by gitnfs commit. The operating system's own NFS client
mounts it; a 100k-file tree is ready in milliseconds and you pay only for
what you touch.

  gitnfs serve                       # this repository's HEAD, on a free port
  gitnfs serve --repo ~/src/x --rev v1.2.0 --listen 127.0.0.1:2049

serve prints the exact mount command for Linux and macOS.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what gitnfs version prints.
		Version: versionString(),
	}
	root.SetVersionTemplate("gitnfs {{.Version}}\n")
	root.AddCommand(newServe(), newMount(), newUmount(), newStats(), newStatus(), newCommit(), newConflicts(), newVersion(), newFSMonitorHook())
	return root
}
