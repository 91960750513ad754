package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestServeRefusesBadInputWithClearMessages(t *testing.T) {
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{"a": {Mode: "100644", Data: []byte("a")}}, "one")
	cases := []struct {
		args []string
		want []string // substrings of the error
	}{
		{[]string{"serve", "--repo", "/no/such/dir"}, []string{"/no/such/dir", "no such directory"}},
		{[]string{"serve", "--repo", t.TempDir()}, []string{"not a git repository", "looked for"}},
		{[]string{"serve", "--repo", repo, "--rev", "no-such-branch"}, []string{`"no-such-branch"`, "unknown revision", "tried"}},
		{[]string{"serve", "--repo", repo, "--cache-size", "lots"}, []string{"--cache-size", `"lots"`}},
		{[]string{"serve", "--repo", repo, "--log-level", "loud"}, []string{"--log-level", "loud"}},
		{[]string{"serve", "--repo", repo, "--listen", "127.0.0.1:99999"}, []string{"listen on 127.0.0.1:99999"}},
	}
	for _, tc := range cases {
		_, err := run(t, tc.args...)
		if err == nil {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", tc.args, err, w)
			}
		}
		if strings.Contains(err.Error(), "goroutine") || strings.Contains(err.Error(), "panic") {
			t.Errorf("%v: error looks like a crash: %q", tc.args, err)
		}
	}
}
