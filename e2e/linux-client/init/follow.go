package main

// The follow workload (issue 7): the export follows a moving branch
// (gitnfs serve --follow). The guest lists and reads the tree, keeps one
// file open, signals the host that its first pass is done (a LOOKUP of a
// name that does not exist: FollowReady, an error the host sees in the
// server's census), and waits for FollowMarker, which the host's commit
// adds. Then it reads everything again and reports what changed: whose
// mtime, whose content, and what make would rebuild (every file newer than
// a stamp taken before the commit). e2e/follow.sh compares that with git.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	FollowMarker = ".follow-marker"
	FollowReady  = ".follow-pass1-done"
	followWait   = 60 * time.Second
)

type followFile struct {
	mtime int64 // ns
	sum   string
}

// followPass opens every regular file below dir (open revalidates its
// attributes: close-to-open), fstats and hashes it.
func followPass(ctx context.Context, dir string) (map[string]followFile, error) {
	files := map[string]followFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")+"/")
		files[rel] = followFile{mtime: st.Mtim.Nano(), sum: hex.EncodeToString(h.Sum(nil))}
		return nil
	})
	return files, err
}

// pathsDigest is sha256 over the sorted paths, each followed by a NUL
// (e2e/follow.sh computes the same from git diff -z --name-only).
func pathsDigest(paths []string) string {
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		h.Write([]byte(p + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func followWorkload(cfg *Config) workload {
	return workload{doc: "follow a moving branch: read all, keep an fd, wait for the host's commit, read all again",
		run: func(ctx context.Context, dir string, items map[string]uint64, out *Output) error {
			before, err := followPass(ctx, dir)
			if err != nil {
				return fmt.Errorf("first pass: %v", err)
			}
			items["files_before"] = uint64(len(before))
			var stamp int64 // make's view: a target built now is at least as new as every input
			var names []string
			for p, f := range before {
				names = append(names, p)
				if f.mtime > stamp {
					stamp = f.mtime
				}
			}
			sort.Strings(names)
			if len(names) == 0 {
				return fmt.Errorf("no regular files")
			}
			if _, ok := before[FollowMarker]; ok {
				return fmt.Errorf("%s exists before the commit", FollowMarker)
			}
			// The fd kept across the switch: the first file in byte order
			// (e2e/follow.sh never changes it).
			keep := names[0]
			out.Strings["fd_path"] = keep
			kf, err := os.Open(dir + "/" + keep)
			if err != nil {
				return err
			}
			defer kf.Close()
			want, err := io.ReadAll(kf)
			if err != nil {
				return err
			}
			items["fd_bytes"] = uint64(len(want))

			// Signal the host: a LOOKUP that fails with NOENT.
			t0 := time.Now()
			os.Stat(dir + "/" + FollowReady)
			seen := false
			polls := uint64(0)
			for time.Since(t0) < followWait && ctx.Err() == nil {
				polls++
				if _, err := os.Stat(dir + "/" + FollowMarker); err == nil {
					seen = true
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			items["visible_ms"] = uint64(time.Since(t0).Milliseconds())
			items["marker_polls"] = polls
			if !seen {
				items["marker_seen"] = 0
				return fmt.Errorf("%s did not appear within %v", FollowMarker, followWait)
			}
			items["marker_seen"] = 1

			// The fd opened before the switch, to a file the commit left alone.
			got := make([]byte, len(want)+1)
			n, rerr := kf.ReadAt(got, 0)
			if rerr != nil && rerr != io.EOF {
				items["fd_read_ok"] = 0
				return fmt.Errorf("read of %s through the fd opened before the switch: %v", keep, rerr)
			}
			if n == len(want) && string(got[:n]) == string(want) {
				items["fd_read_ok"] = 1
			} else {
				items["fd_read_ok"] = 0
				return fmt.Errorf("fd opened before the switch read %d bytes that differ from the %d read before", n, len(want))
			}

			after, err := followPass(ctx, dir)
			if err != nil {
				return fmt.Errorf("second pass: %v", err)
			}
			items["files_after"] = uint64(len(after))
			var mtimeChanged, contentChanged, rebuild, added, removed, mtimeOnly, contentOnly []string
			for p, a := range after {
				b, ok := before[p]
				if a.mtime > stamp {
					rebuild = append(rebuild, p)
				}
				if !ok {
					added = append(added, p)
					mtimeChanged = append(mtimeChanged, p)
					contentChanged = append(contentChanged, p)
					continue
				}
				m, c := a.mtime != b.mtime, a.sum != b.sum
				if m {
					mtimeChanged = append(mtimeChanged, p)
				}
				if c {
					contentChanged = append(contentChanged, p)
				}
				if m && !c {
					mtimeOnly = append(mtimeOnly, p)
				}
				if c && !m {
					contentOnly = append(contentOnly, p)
				}
			}
			for p := range before {
				if _, ok := after[p]; !ok {
					removed = append(removed, p)
				}
			}
			items["mtime_changed"] = uint64(len(mtimeChanged))
			items["content_changed"] = uint64(len(contentChanged))
			items["make_rebuild"] = uint64(len(rebuild))
			items["added"] = uint64(len(added))
			items["removed"] = uint64(len(removed))
			items["mtime_changed_same_content"] = uint64(len(mtimeOnly))
			items["content_changed_same_mtime"] = uint64(len(contentOnly))
			out.Strings["mtime_changed_paths"] = pathsDigest(mtimeChanged)
			out.Strings["content_changed_paths"] = pathsDigest(contentChanged)
			out.Strings["make_rebuild_paths"] = pathsDigest(rebuild)
			lists := []struct {
				kind  string
				paths []string
			}{{"mtime", mtimeChanged}, {"content", contentChanged}, {"rebuild", rebuild}, {"removed", removed}}
			for _, l := range lists {
				sort.Strings(l.paths)
				for _, p := range l.paths {
					emitResults("follow kind=%s path=%s", l.kind, q(p))
				}
			}

			// The new tree's digests, in cat_all's form (census expect of the new commit).
			st := WalkWith(ctx, dir, WalkCat, nil)
			c, m := st.Digests()
			out.Strings["content_sha256"] = c
			out.Strings["meta_sha256"] = m
			return walkItems(st, items)
		}}
}
