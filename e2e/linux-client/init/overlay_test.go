package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tree with a tracked file and directory, as the export would have.
func posixTree(t *testing.T) string {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "src", "lib"), 0o755)
	os.WriteFile(filepath.Join(root, "README"), []byte("readme\n"), 0o644)
	os.WriteFile(filepath.Join(root, "src", "main.c"), []byte("int main;\n"), 0o644)
	return root
}

func TestPosixOnLocalFS(t *testing.T) {
	root := posixTree(t)
	items := map[string]uint64{}
	if err := runPosix(root, items); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "README.renamed")); err == nil {
		t.Error("README.renamed should have moved into the posix dir and been removed")
	}
	if _, err := os.Stat(filepath.Join(root, "src-moved", "main.c")); err != nil {
		t.Errorf("tracked dir not renamed: %v", err)
	}
	if items["steps_ok"] < 15 {
		t.Errorf("steps_ok = %d", items["steps_ok"])
	}
}

// On a read-only tree the first step fails and names itself.
func TestPosixReadOnlyFails(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	root := posixTree(t)
	os.Chmod(root, 0o555)
	defer os.Chmod(root, 0o755)
	err := runPosix(root, map[string]uint64{})
	if err == nil || !strings.Contains(err.Error(), `step 2 "mkdir"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestInstallOnLocalFS(t *testing.T) {
	root := t.TempDir()
	items := map[string]uint64{}
	if err := runInstall(context.Background(), root, 60, 10, 3, items); err != nil {
		t.Fatal(err)
	}
	if items["files_created"] != 600 || items["renames"] != 60 || items["stats"] != 1800 || items["ops"] != 600+600+60+1800 {
		t.Errorf("items = %v", items)
	}
	if items["ops_per_s"] == 0 {
		t.Error("ops_per_s = 0")
	}
	for d := 0; d < 60; d++ {
		for i := 0; i < 10; i++ {
			if n := len(installContent(d, i)); n < 200 || n > 4096 {
				t.Fatalf("size %d out of range", n)
			}
		}
	}
}
