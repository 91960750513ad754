package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScriptWorkloadReportsLinesAndExitCode(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.sh")
	os.WriteFile(script, []byte("echo one; echo two >&2; test -d \"$1\" && exit 3\n"), 0o644)
	w := scriptWorkload(&Config{Script: script}, "")
	items := map[string]uint64{}
	err := w.run(context.Background(), dir, items, &Output{})
	if err == nil || !strings.Contains(err.Error(), "exited 3") {
		t.Fatalf("err = %v, want the script's exit 3", err)
	}
	if items["script_lines"] != 2 || items["exit_code"] != 3 {
		t.Fatalf("items = %v, want 2 lines and exit code 3", items)
	}
}

func TestCheckMountsRefusesBadNames(t *testing.T) {
	for _, ms := range [][]ExtraMount{
		{{Name: "nfs", Port: 1}},
		{{Name: "a-b", Port: 1}},
		{{Name: "ro", Port: 1}, {Name: "ro", Port: 2}},
		{{Name: "ro", Port: 0}},
	} {
		if err := checkMounts(ms); err == nil {
			t.Errorf("%v accepted", ms)
		}
	}
	if err := checkMounts([]ExtraMount{{Name: "ro", Port: 2049}, {Name: "merge", Port: 2050}}); err != nil {
		t.Error(err)
	}
}
