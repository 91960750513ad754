package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set by the linker: make build passes -X main.version= with
// git describe --always --dirty, which already names the commit and
// whether the tree was dirty.
var version = ""

// versionString is what gitnfs version and gitnfs --version print: the
// stamped version as it is, else the module version (go install ...@v1.2.0)
// or "devel", with the VCS revision Go recorded, if any.
func versionString() string {
	if version != "" {
		return version
	}
	v := ""
	rev, dirty := "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " (" + rev
		if dirty {
			v += "-dirty"
		}
		v += ")"
	}
	return v
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the gitnfs version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "gitnfs", versionString())
			return nil
		},
	}
}
