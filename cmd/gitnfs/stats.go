package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/stats"
)

func newStats() *cobra.Command {
	var addr string
	var asJSON, byExport bool
	cmd := &cobra.Command{
		Use:   "stats --addr HOST:PORT",
		Short: "Print a running server's op census",
		Long: `stats fetches the op census from a server started with --metrics-addr and
prints it: client RPCs per procedure (calls, errors by status, bytes, server
time), the server's internal work in a separate table, and derived lines such
as LOOKUPs per listed entry. Internal counters are never client calls.

A server that serves other revisions beside its own (MOUNT of REV:PATH,
.gitnfs/rev) counts each export apart: the tables sum them, followed by one
line per export; --by-export prints each export's own tables.`,
		Example: `  gitnfs serve --metrics-addr 127.0.0.1:9108 &
  gitnfs stats --addr 127.0.0.1:9108
  curl -X POST http://127.0.0.1:9108/reset   # start a new window`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			r, err := stats.Fetch(ctx, addr)
			if errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("%w\n  no gitnfs server serves its census on %s: start one with gitnfs serve --metrics-addr %s (or pass that server's --metrics-addr as --addr)", err, addr, addr)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return r.WriteJSON(os.Stdout)
			}
			if byExport {
				return r.WriteTableByExport(cmd.OutOrStdout())
			}
			return r.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9108", "the server's --metrics-addr")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of the table (with every export's share under \"exports\")")
	cmd.Flags().BoolVar(&byExport, "by-export", false, "print the tables of each export (the served revision, each revision mounted beside it) instead of their sum")
	return cmd
}
