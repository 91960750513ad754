// Command census is the host side of the e2e suite (e2e/run.sh): it
// computes what git says a revision holds, and checks what the Linux
// kernel's NFS client saw against it.
//
//	census expect -repo DIR [-rev HEAD] [-manifest FILE] > expect.json
//	census check -expect expect.json -results DIR [limits...]
//	census freeport
//
// expect counts the revision's files, directories and symlinks with
// `git ls-tree -r -t` and hashes every blob read through
// `git cat-file --batch` into the same two digests the guest's cat_all
// workload computes (content: sorted "path\0sha256\n" of every regular
// file; meta: sorted "path\0mode\0target\n" of every file and symlink).
//
// check reads the run folder of e2e/linux-client/run.sh (census.json,
// results.txt, console.log), prints the census table, evaluates the
// assertions and exits 1 when one fails, naming it and by how much.
//
// Only the standard library and the git CLI are used.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Expect is what git says the served revision holds.
type Expect struct {
	Repo          string `json:"repo"`
	Rev           string `json:"rev"`
	Commit        string `json:"commit"`
	Tree          string `json:"tree"`
	Files         int    `json:"files"`
	Dirs          int    `json:"dirs"` // below the root
	Symlinks      int    `json:"symlinks"`
	Gitlinks      int    `json:"gitlinks"`
	Executables   int    `json:"executables"`
	Bytes         int64  `json:"bytes"`
	ContentSHA256 string `json:"content_sha256"`
	MetaSHA256    string `json:"meta_sha256"`
}

// Entries is every entry below the root.
func (e *Expect) Entries() int { return e.Files + e.Dirs + e.Symlinks + e.Gitlinks }

func gitCmd(repo string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
	cmd.Stderr = os.Stderr
	return cmd
}

func gitOut(repo string, args ...string) (string, error) {
	out, err := gitCmd(repo, args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

type entry struct {
	mode, typ, sha, path string
}

// lsTree lists every entry of rev, recursively, trees included.
func lsTree(repo, rev string) ([]entry, error) {
	out, err := gitCmd(repo, "ls-tree", "-r", "-t", "-z", "--full-tree", rev).Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-tree %s: %v", rev, err)
	}
	var ents []entry
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		tab := bytes.IndexByte(rec, '\t')
		f := strings.Fields(string(rec[:max(tab, 0)]))
		if tab < 0 || len(f) != 3 {
			return nil, fmt.Errorf("git ls-tree: unexpected record %q", rec)
		}
		ents = append(ents, entry{mode: f[0], typ: f[1], sha: f[2], path: string(rec[tab+1:])})
	}
	return ents, nil
}

// blobDigests streams every distinct blob through `git cat-file --batch`
// and returns its SHA-256 (hex), and for symlinks its content.
func blobDigests(repo string, shas []string, keep map[string]bool) (map[string]string, map[string]string, int64, error) {
	cmd := gitCmd(repo, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, 0, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, 0, err
	}
	werr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriter(in)
		for _, s := range shas {
			bw.WriteString(s + "\n")
		}
		err := bw.Flush()
		in.Close()
		werr <- err
	}()
	br := bufio.NewReaderSize(outp, 1<<20)
	sums := map[string]string{}
	kept := map[string]string{}
	var total int64
	for range shas {
		hdr, err := br.ReadString('\n')
		if err != nil {
			return nil, nil, 0, fmt.Errorf("git cat-file --batch: %v", err)
		}
		f := strings.Fields(hdr)
		if len(f) != 3 || f[1] != "blob" {
			return nil, nil, 0, fmt.Errorf("git cat-file --batch: unexpected header %q", hdr)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("git cat-file --batch: header %q: %v", hdr, err)
		}
		h := sha256.New()
		var buf bytes.Buffer
		w := io.Writer(h)
		if keep[f[0]] {
			w = io.MultiWriter(h, &buf)
		}
		if _, err := io.CopyN(w, br, n); err != nil {
			return nil, nil, 0, fmt.Errorf("git cat-file --batch: blob %s: %v", f[0], err)
		}
		if b, err := br.ReadByte(); err != nil || b != '\n' {
			return nil, nil, 0, fmt.Errorf("git cat-file --batch: blob %s not followed by a newline", f[0])
		}
		sums[f[0]] = hex.EncodeToString(h.Sum(nil))
		if keep[f[0]] {
			kept[f[0]] = buf.String()
		}
		total += n
	}
	if err := <-werr; err != nil {
		return nil, nil, 0, err
	}
	if err := cmd.Wait(); err != nil {
		return nil, nil, 0, fmt.Errorf("git cat-file --batch: %v", err)
	}
	return sums, kept, total, nil
}

func digest(lines []string) string {
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		io.WriteString(h, l)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ComputeExpect returns what git says rev of repo holds, and the manifest
// lines behind the two digests (content lines, then meta lines).
func ComputeExpect(repo, rev string) (*Expect, []string, error) {
	e := &Expect{Repo: repo, Rev: rev}
	var err error
	if e.Commit, err = gitOut(repo, "rev-parse", "--verify", rev+"^{commit}"); err != nil {
		return nil, nil, err
	}
	if e.Tree, err = gitOut(repo, "rev-parse", "--verify", rev+"^{tree}"); err != nil {
		return nil, nil, err
	}
	ents, err := lsTree(repo, e.Commit)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	keep := map[string]bool{}
	var shas []string
	for _, en := range ents {
		switch en.mode {
		case "040000":
			e.Dirs++
			continue
		case "160000":
			e.Gitlinks++
			continue
		case "100644", "100755":
			e.Files++
			if en.mode == "100755" {
				e.Executables++
			}
		case "120000":
			e.Symlinks++
			keep[en.sha] = true
		default:
			return nil, nil, fmt.Errorf("%s: unexpected mode %s", en.path, en.mode)
		}
		if !seen[en.sha] {
			seen[en.sha] = true
			shas = append(shas, en.sha)
		}
	}
	sums, kept, _, err := blobDigests(repo, shas, keep)
	if err != nil {
		return nil, nil, err
	}
	var content, meta []string
	for _, en := range ents {
		switch en.mode {
		case "100644", "100755":
			content = append(content, en.path+"\x00"+sums[en.sha]+"\n")
			meta = append(meta, en.path+"\x00"+en.mode+"\x00\n")
		case "120000":
			meta = append(meta, en.path+"\x00120000\x00"+kept[en.sha]+"\n")
		}
	}
	// bytes: the sum over files (duplicates counted once per path).
	sizes, err := blobSizes(repo, e.Commit)
	if err != nil {
		return nil, nil, err
	}
	e.Bytes = sizes
	e.ContentSHA256 = digest(content)
	e.MetaSHA256 = digest(meta)
	return e, append(content, meta...), nil
}

func blobSizes(repo, rev string) (int64, error) {
	out, err := gitCmd(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", rev).Output()
	if err != nil {
		return 0, fmt.Errorf("git ls-tree -l: %v", err)
	}
	var total int64
	for _, rec := range bytes.Split(out, []byte{0}) {
		tab := bytes.IndexByte(rec, '\t')
		if tab < 0 {
			continue
		}
		f := strings.Fields(string(rec[:tab]))
		if len(f) == 4 && (f[0] == "100644" || f[0] == "100755") {
			n, _ := strconv.ParseInt(f[3], 10, 64)
			total += n
		}
	}
	return total, nil
}

// ---------------------------------------------------------------- check

// Census is the part of run.sh's census.json that check reads.
type Census struct {
	Kernel    string   `json:"kernel"`
	MountOpts string   `json:"effective_opts"`
	Status    string   `json:"status"`
	Error     string   `json:"error"`
	Results   []Result `json:"results"`
	Config    struct {
		Workloads []string `json:"workloads"`
	} `json:"config"`
}

// Result is one workload of census.json.
type Result struct {
	Workload string            `json:"workload"`
	WallMs   float64           `json:"wall_ms"`
	Items    map[string]uint64 `json:"items"`
	Strings  map[string]string `json:"strings"`
	Error    string            `json:"error"`
	Ops      map[string]Op     `json:"ops"`
	OpOrder  []string          `json:"op_order"`
	Total    uint64            `json:"total_rpcs"`
}

// Op is one procedure's counters over a workload.
type Op struct {
	Count    uint64 `json:"count"`
	Trans    uint64 `json:"trans"`
	Timeouts uint64 `json:"timeouts"`
	RttMs    uint64 `json:"rtt_ms"`
	Errors   uint64 `json:"errors"`
}

// Limits are the thresholds of the floor assertions.
type Limits struct {
	LookupPerEntry float64 // cold find_type_f: LOOKUP beyond one per symlink, per non-symlink entry
	ReaddirPerDir  float64 // cold find_type_f: (READDIRPLUS+READDIR) per directory
	StrictDType    bool    // DT_UNKNOWN forbidden for symlinks too
	NoContent      bool    // a run without cat_all on purpose (write workloads): no content-digest failure for its absence
	// AllowRetransmits: a call sent again after the server went away and came
	// back (e2e/restart.sh) is expected; error replies and timeouts are not.
	AllowRetransmits bool
	AllowErrors      map[string]bool
	RequireWorkload  []string
}

// Assertion is one checked claim.
type Assertion struct {
	Name   string
	OK     bool
	Detail string
}

type checker struct {
	exp  *Expect
	c    *Census
	lim  Limits
	out  []Assertion
	byWl map[string]*Result
}

func (k *checker) add(name string, ok bool, format string, a ...any) {
	k.out = append(k.out, Assertion{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
}

func ratio(n uint64, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// Check evaluates every assertion on a census against git's expectations.
// manifest holds the guest's manifest lines (may be nil) and want git's;
// they only serve to name the paths behind a digest mismatch. kernelLog is
// the console log of the guest (may be empty).
func Check(exp *Expect, c *Census, lim Limits, manifest, want []string, kernelLog string) []Assertion {
	k := &checker{exp: exp, c: c, lim: lim, byWl: map[string]*Result{}}
	for i := range c.Results {
		k.byWl[c.Results[i].Workload] = &c.Results[i]
	}
	nonLink := exp.Files + exp.Dirs
	dirs := exp.Dirs + 1 // the root is a directory too

	// 1. every workload ran and says ok.
	for _, w := range lim.RequireWorkload {
		r := k.byWl[w]
		switch {
		case r == nil:
			k.add("status/"+w, false, "workload %s did not run (census status %q %s)", w, c.Status, c.Error)
		case r.Error != "":
			k.add("status/"+w, false, "workload %s failed: %s", w, r.Error)
		default:
			k.add("status/"+w, true, "ok in %.1f s", r.WallMs/1000)
		}
	}

	// 2. no op error, no timeout, no retransmission.
	for _, r := range c.Results {
		var bad []string
		for _, op := range r.OpOrder {
			o := r.Ops[op]
			if o.Errors > 0 && !lim.AllowErrors[r.Workload+":"+op] && !lim.AllowErrors["*:"+op] {
				bad = append(bad, fmt.Sprintf("%s %d errors of %d", op, o.Errors, o.Count))
			}
			if o.Timeouts > 0 || (o.Trans > o.Count && !lim.AllowRetransmits) {
				bad = append(bad, fmt.Sprintf("%s %d timeouts, %d transmissions for %d calls", op, o.Timeouts, o.Trans, o.Count))
			}
		}
		if len(bad) > 0 {
			k.add("errors/"+r.Workload, false, "error replies (ESTALE, EIO, ...), timeouts or retransmissions seen by the client: %s", strings.Join(bad, "; "))
		} else {
			k.add("errors/"+r.Workload, true, "no op errors, timeouts or retransmissions")
		}
	}

	// 3. the walks count what git holds.
	if r := k.byWl["find_type_f"]; r != nil && r.Error == "" {
		got := r.Items["stdout_lines"]
		k.add("counts/find_type_f", got == uint64(exp.Files), "find -type f printed %d paths, git has %d files (%+d)", got, exp.Files, int64(got)-int64(exp.Files))
	}
	for _, w := range []string{"go_names", "cat_all", "stat_all"} {
		r := k.byWl[w]
		if r == nil || r.Error != "" {
			continue
		}
		it := r.Items
		ok := it["files"] == uint64(exp.Files) && it["dirs"] == uint64(exp.Dirs) && it["symlinks"] == uint64(exp.Symlinks) && it["other"] == 0
		k.add("counts/"+w, ok, "walk saw %d files, %d dirs, %d symlinks, %d other; git has %d, %d, %d (diff %+d, %+d, %+d)",
			it["files"], it["dirs"], it["symlinks"], it["other"], exp.Files, exp.Dirs, exp.Symlinks,
			int64(it["files"])-int64(exp.Files), int64(it["dirs"])-int64(exp.Dirs), int64(it["symlinks"])-int64(exp.Symlinks))
	}

	// 4. every byte identical to git; modes and symlink targets too.
	if r := k.byWl["cat_all"]; r != nil && r.Error == "" {
		it := r.Items
		k.add("bytes/cat_all", it["files_read"] == uint64(exp.Files) && it["bytes_read"] == uint64(exp.Bytes),
			"read %d files, %d bytes; git has %d files, %d bytes (diff %+d files, %+d bytes)",
			it["files_read"], it["bytes_read"], exp.Files, exp.Bytes, int64(it["files_read"])-int64(exp.Files), int64(it["bytes_read"])-int64(exp.Bytes))
		got := r.Strings["content_sha256"]
		k.add("content-digest/cat_all", got == exp.ContentSHA256, "sha256 over sorted path+sha256(content) of every file: guest %s, git %s%s",
			short(got), short(exp.ContentSHA256), diffHint(got == exp.ContentSHA256, manifest, want, "content"))
		got = r.Strings["meta_sha256"]
		k.add("meta-digest/cat_all", got == exp.MetaSHA256, "sha256 over sorted path+mode+symlink target: guest %s, git %s%s",
			short(got), short(exp.MetaSHA256), diffHint(got == exp.MetaSHA256, manifest, want, "meta"))
	} else if r == nil && !lim.NoContent {
		k.add("content-digest/cat_all", false, "cat_all did not run: file contents were not compared with git")
	}

	// 5. d_type: nothing but symlinks comes back DT_UNKNOWN from
	// READDIRPLUS. The entries the 6.1 client itself fetched with plain
	// READDIR (its fallback after the first getdents call of a long
	// directory when nothing used the attributes) never have a type: they
	// are reported, and only -strict-dtype counts them.
	if r := k.byWl["go_names"]; r != nil && r.Error == "" {
		unk, nonlink, fb := r.Items["dt_unknown"], r.Items["dt_unknown_nonlink"], r.Items["dt_unknown_nonlink_readdir"]
		server := nonlink - min(fb, nonlink)
		fbNote := ""
		if fb > 0 {
			fbNote = fmt.Sprintf("; %d more in %d directories where the client itself switched to plain READDIR (%s)",
				fb, r.Items["readdir_fallback_dirs"], r.Strings["readdir_fallback_dir_names"])
		}
		if lim.StrictDType {
			k.add("dtype/go_names", unk == 0, "%d entries came back DT_UNKNOWN (%d not symlinks, %d of those from the client's READDIR fallback); strict: limit 0", unk, nonlink, fb)
		} else {
			k.add("dtype/go_names", server == 0, "%d non-symlink entries came back DT_UNKNOWN from READDIRPLUS (limit 0); %d symlinks did (allowed: a symlink may come without attributes)%s",
				server, unk-nonlink, fbNote)
		}
	}

	// 6. cold find -type f at the client's floor.
	if r := k.byWl["find_type_f"]; r != nil && r.Error == "" {
		// A symlink may come without attributes and cost one LOOKUP when
		// find must lstat it; those are not counted against the floor.
		lk := r.Ops["LOOKUP"].Count
		excess := lk - min(lk, uint64(exp.Symlinks))
		v := ratio(excess, nonLink)
		k.add("lookups/find_type_f", v <= lim.LookupPerEntry, "%d LOOKUP, %d beyond one per symlink = %.4f per non-symlink entry (limit %.4f; %d over the limit)",
			lk, excess, v, lim.LookupPerEntry, overBy(excess, lim.LookupPerEntry, nonLink))
		rd := r.Ops["READDIRPLUS"].Count + r.Ops["READDIR"].Count
		v = ratio(rd, dirs)
		k.add("readdirs/find_type_f", v <= lim.ReaddirPerDir, "%d READDIRPLUS + %d READDIR = %.4f per directory (limit %.4f; %d calls over the limit)",
			r.Ops["READDIRPLUS"].Count, r.Ops["READDIR"].Count, v, lim.ReaddirPerDir, overBy(rd, lim.ReaddirPerDir, dirs))
	}

	// 7. the guest kernel did not complain about the server.
	var klines []string
	for _, l := range strings.Split(kernelLog, "\n") {
		ll := strings.ToLower(l)
		if strings.Contains(ll, "not responding") || strings.Contains(ll, "stale") || strings.Contains(ll, "nfs: server") ||
			strings.Contains(ll, "i/o error") || strings.Contains(ll, "nfs_update_inode") || strings.Contains(ll, "fileid changed") {
			klines = append(klines, strings.TrimSpace(l))
		}
	}
	if len(klines) > 5 {
		klines = append(klines[:5], fmt.Sprintf("... %d more", len(klines)-5))
	}
	k.add("kernel-log", len(klines) == 0, "NFS complaints in the guest kernel log: %d%s", len(klines), joinPrefixed(klines))
	return k.out
}

func joinPrefixed(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return ":\n      " + strings.Join(l, "\n      ")
}

func overBy(n uint64, limit float64, denom int) int64 {
	allowed := int64(limit * float64(denom))
	if d := int64(n) - allowed; d > 0 {
		return d
	}
	return 0
}

func short(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

// diffHint names up to 10 paths whose manifest lines differ.
func diffHint(equal bool, got, want []string, kind string) string {
	if equal {
		return ""
	}
	if len(got) == 0 {
		return " (no manifest from the guest: rerun with --manifest to see which paths differ)"
	}
	isKind := func(l string) bool { return (strings.Count(l, "\x00") == 1) == (kind == "content") }
	g, w := map[string]bool{}, map[string]bool{}
	for _, l := range got {
		if isKind(l) {
			g[l] = true
		}
	}
	for _, l := range want {
		if isKind(l) {
			w[l] = true
		}
	}
	var d []string
	for l := range w {
		if !g[l] {
			d = append(d, "git:   "+strconv.Quote(strings.TrimSuffix(l, "\n")))
		}
	}
	for l := range g {
		if !w[l] {
			d = append(d, "guest: "+strconv.Quote(strings.TrimSuffix(l, "\n")))
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i][7:] < d[j][7:] })
	n := len(d)
	if n > 10 {
		d = append(d[:10], fmt.Sprintf("... %d more", n-10))
	}
	return fmt.Sprintf(" (%d differing lines:\n      %s)", n, strings.Join(d, "\n      "))
}

// readManifest parses the guest's "manifest ..." lines of results.txt back
// into the "path\0sha\n" / "path\0mode\0target\n" form.
func readManifest(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "manifest ") {
			continue
		}
		kv := parseKV(l[len("manifest "):])
		switch kv["kind"] {
		case "content":
			out = append(out, kv["path"]+"\x00"+kv["sha256"]+"\n")
		case "meta":
			out = append(out, kv["path"]+"\x00"+kv["mode"]+"\x00"+kv["target"]+"\n")
		}
	}
	return out, sc.Err()
}

// parseKV splits `a=b c="quoted value"` into a map (values unquoted).
func parseKV(s string) map[string]string {
	m := map[string]string{}
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ")
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		key := s[:eq]
		s = s[eq+1:]
		if strings.HasPrefix(s, `"`) {
			v, err := strconv.QuotedPrefix(s)
			if err != nil {
				break
			}
			m[key], _ = strconv.Unquote(v)
			s = s[len(v):]
		} else {
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				sp = len(s)
			}
			m[key] = s[:sp]
			s = s[sp:]
		}
	}
	return m
}

// Table prints the census: one row per workload, RPC counts per op.
func Table(w io.Writer, exp *Expect, c *Census) {
	entries, dirs := exp.Entries(), exp.Dirs+1
	fmt.Fprintf(w, "census: kernel %s, tree %s: %d entries (%d files, %d dirs + root, %d symlinks, %d executables, %d bytes)\n",
		c.Kernel, short(exp.Commit), entries, exp.Files, exp.Dirs, exp.Symlinks, exp.Executables, exp.Bytes)
	if c.MountOpts != "" {
		fmt.Fprintf(w, "mount: %s\n", c.MountOpts)
	}
	cols := []string{"GETATTR", "LOOKUP", "ACCESS", "READDIRPLUS", "READDIR", "READ", "READLINK"}
	fmt.Fprintf(w, "%-12s %-6s %8s %8s %7s %7s", "workload", "status", "wall_s", "rpcs", "/entry", "/dir")
	for _, c := range cols {
		fmt.Fprintf(w, " %11s", c)
	}
	fmt.Fprintf(w, " %-8s %s\n", "other", "errors")
	for _, r := range c.Results {
		st := "ok"
		if r.Error != "" {
			st = "ERROR"
		}
		fmt.Fprintf(w, "%-12s %-6s %8.1f %8d %7.4f %7.3f", r.Workload, st, r.WallMs/1000, r.Total, ratio(r.Total, entries), ratio(r.Total, dirs))
		known := map[string]bool{}
		for _, op := range cols {
			known[op] = true
			fmt.Fprintf(w, " %11d", r.Ops[op].Count)
		}
		var other, errs []string
		for _, op := range r.OpOrder {
			o := r.Ops[op]
			if !known[op] && o.Count > 0 {
				other = append(other, fmt.Sprintf("%s:%d", op, o.Count))
			}
			if o.Errors > 0 {
				errs = append(errs, fmt.Sprintf("%s:%d", op, o.Errors))
			}
		}
		fmt.Fprintf(w, " %-8s %s\n", orDash(other), orDash(errs))
	}
	fmt.Fprintf(w, "per directory (%d dirs incl. root):", dirs)
	for _, r := range c.Results {
		fmt.Fprintf(w, " %s GETATTR %.3f ACCESS %.3f READDIR(PLUS) %.4f;", r.Workload,
			ratio(r.Ops["GETATTR"].Count, dirs), ratio(r.Ops["ACCESS"].Count, dirs), ratio(r.Ops["READDIRPLUS"].Count+r.Ops["READDIR"].Count, dirs))
	}
	fmt.Fprintln(w)
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func cmdExpect(args []string) error {
	fs := flag.NewFlagSet("expect", flag.ExitOnError)
	repo := fs.String("repo", "", "git repository")
	rev := fs.String("rev", "HEAD", "revision")
	mf := fs.String("manifest", "", "also write git's manifest lines to this file")
	fs.Parse(args)
	if *repo == "" {
		return errors.New("expect: -repo is required")
	}
	e, lines, err := ComputeExpect(*repo, *rev)
	if err != nil {
		return err
	}
	if *mf != "" {
		if err := os.WriteFile(*mf, []byte(strings.Join(lines, "")), 0o644); err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(e, "", "  ")
	fmt.Println(string(b))
	return nil
}

func cmdCheck(args []string) (bool, error) {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	expPath := fs.String("expect", "", "expect.json written by `census expect`")
	wantManifest := fs.String("expect-manifest", "", "git's manifest lines (census expect -manifest), to name differing paths")
	dir := fs.String("results", "", "run folder of linux-client/run.sh (census.json, results.txt, console.log)")
	lim := Limits{}
	fs.Float64Var(&lim.LookupPerEntry, "max-lookup", 0.01, "cold find_type_f: LOOKUP per non-symlink entry")
	fs.Float64Var(&lim.ReaddirPerDir, "max-readdir", 1.002, "cold find_type_f: READDIRPLUS+READDIR per directory")
	fs.BoolVar(&lim.StrictDType, "strict-dtype", false, "no DT_UNKNOWN at all, symlinks included")
	fs.BoolVar(&lim.NoContent, "no-content-check", false, "cat_all is left out on purpose: do not fail content-digest/cat_all for its absence")
	fs.BoolVar(&lim.AllowRetransmits, "allow-retransmits", false, "calls resent after a server restart are expected (error replies and timeouts still fail)")
	allow := fs.String("allow-errors", "", "comma-separated WORKLOAD:OP (or *:OP) whose errors are expected")
	workloads := fs.String("workloads", "", "comma-separated workloads that must have run ok")
	fs.Parse(args)
	if *expPath == "" || *dir == "" {
		return false, errors.New("check: -expect and -results are required")
	}
	exp := &Expect{}
	if err := readJSON(*expPath, exp); err != nil {
		return false, err
	}
	c := &Census{}
	if err := readJSON(filepath.Join(*dir, "census.json"), c); err != nil {
		return false, fmt.Errorf("no census from the guest: %v", err)
	}
	lim.AllowErrors = map[string]bool{}
	for _, a := range strings.Split(*allow, ",") {
		if a != "" {
			lim.AllowErrors[a] = true
		}
	}
	lim.RequireWorkload = c.Config.Workloads
	if *workloads != "" {
		lim.RequireWorkload = strings.Split(*workloads, ",")
	}
	manifest, _ := readManifest(filepath.Join(*dir, "results.txt"))
	var want []string
	if *wantManifest != "" {
		if b, err := os.ReadFile(*wantManifest); err == nil {
			for _, l := range strings.SplitAfter(string(b), "\n") {
				if l != "" {
					want = append(want, l)
				}
			}
		}
	}
	klog, _ := os.ReadFile(filepath.Join(*dir, "console.log"))
	if i := bytes.Index(klog, []byte("----- kernel log (dmesg) -----")); i >= 0 {
		klog = klog[i:]
	}
	Table(os.Stdout, exp, c)
	res := Check(exp, c, lim, manifest, want, string(klog))
	failed := 0
	for _, a := range res {
		mark := "PASS"
		if !a.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Printf("%s %-24s %s\n", mark, a.Name, a.Detail)
	}
	if failed > 0 {
		var names []string
		for _, a := range res {
			if !a.OK {
				names = append(names, a.Name)
			}
		}
		fmt.Printf("e2e: %d of %d assertions FAILED: %s\n", failed, len(res), strings.Join(names, " "))
		return false, nil
	}
	fmt.Printf("e2e: all %d assertions passed\n", len(res))
	return true, nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: census expect|check|freeport [flags]")
		os.Exit(2)
	}
	var err error
	ok := true
	switch os.Args[1] {
	case "expect":
		err = cmdExpect(os.Args[2:])
	case "check":
		ok, err = cmdCheck(os.Args[2:])
	case "freeport":
		var l net.Listener
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Println(l.Addr().(*net.TCPAddr).Port)
			l.Close()
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "census:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
