// Command genrepo writes a deterministic git repository shaped like a real
// source tree, for the end-to-end suite (e2e/run.sh).
//
//	genrepo -o DIR [-shape full|tiny] [-seed N] [-bare]
//
// The "full" shape is about 17k files in 4.3k directories: a random tree up
// to 8 levels deep, three directories with 1k+ entries (two flat ones of
// files, one of directories), ~80 relative symlinks (to files, to
// directories, dangling, a chain, a self-loop), some executables, some
// duplicate and empty blobs, names with spaces, UTF-8, leading dashes and
// dots and up to 255 bytes, file sizes from 0 to 200 KiB plus a few of
// 0.3-3 MiB. "tiny" is the same recipe in a few hundred entries.
//
// The same seed gives the same commit id. Nothing is checked out: the
// objects are streamed into `git fast-import` (one pack), then HEAD points
// at refs/heads/main. It prints one line of key=value facts about what it
// wrote. It uses only the standard library and the git CLI.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"time"
)

// Shape is what a generated tree looks like.
type Shape struct {
	Dirs      int   // directories below the root, all of them
	Files     int   // regular files
	Symlinks  int   // symbolic links
	MaxDepth  int   // deepest directory level (the root is level 0)
	FlatBig   []int // files in each big flat directory
	DirBig    int   // subdirectories of the big directory of directories
	Large     int   // files of 0.3-3 MiB
	ExecPct   int   // percent of ordinary files that are executable (plus every .sh)
	DupPct    int   // percent of files that repeat an earlier file's content
	EmptyPerM int   // empty files per mille
	Special   bool  // add the odd names (spaces, UTF-8, 255 bytes, ...)
	BigNames  []string
	TopDirs   []string
	RootFiles []string
}

var shapes = map[string]Shape{
	"full": {
		Dirs: 4300, Files: 17000, Symlinks: 80, MaxDepth: 8,
		FlatBig: []int{2000, 1300}, DirBig: 1100, Large: 4,
		ExecPct: 1, DupPct: 2, EmptyPerM: 15, Special: true,
		BigNames:  []string{"testdata/corpus", "assets/icons", "third_party/registry"},
		TopDirs:   []string{"src", "docs", "tools", "third_party", "testdata", "assets", "scripts", "internal", "cmd", "test", "examples", "config", ".github"},
		RootFiles: []string{"README.md", "LICENSE", "Makefile", ".gitignore", "go.mod", "go.sum", "CONTRIBUTING.md", ".editorconfig"},
	},
	"tiny": {
		Dirs: 40, Files: 260, Symlinks: 12, MaxDepth: 5,
		FlatBig: []int{120}, DirBig: 0, Large: 1,
		ExecPct: 3, DupPct: 3, EmptyPerM: 20, Special: true,
		BigNames:  []string{"testdata/corpus"},
		TopDirs:   []string{"src", "docs", "testdata", "scripts", ".github"},
		RootFiles: []string{"README.md", "LICENSE", "Makefile", ".gitignore"},
	},
}

// rng is splitmix64: tiny, fast, and the same on every platform and Go
// version, which math/rand does not promise for derived values.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n); n must be > 0.
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// between returns a value in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

func (r *rng) pick(s []string) string { return s[r.intn(len(s))] }

// fnv64 hashes a path into a per-file seed, so that a file's content does
// not depend on the order in which files are generated.
func fnv64(seed uint64, s string) uint64 {
	h := uint64(14695981039346656037) ^ seed
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

type node struct {
	name     string
	parent   *node
	depth    int
	isDir    bool
	fixed    bool // a big directory: the random tree does not grow into it
	children []*node
	names    map[string]bool

	// files and symlinks
	mode   string // 100644, 100755, 120000
	size   int
	binary bool
	dupOf  *node // same content as this earlier file
	target string
}

func (n *node) path() string {
	if n.parent == nil {
		return ""
	}
	if p := n.parent.path(); p != "" {
		return p + "/" + n.name
	}
	return n.name
}

type gen struct {
	r     *rng
	shape Shape
	root  *node
	dirs  []*node // every directory, the root first
	files []*node
	links []*node
}

var words = strings.Fields(`
alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega
util utils helper helpers common core base main server client proto
api http rpc grpc net io fs file files path paths tree node nodes cache
store storage index object objects blob commit ref refs pack config
options parse parser lexer token scanner ast eval vm codegen build
test tests bench fixtures mock fake stub golden data schema model view
controller handler handlers route router middleware auth session user
users account admin log logger logging trace metrics stats health
queue worker job task sched timer clock time date sync lock mutex pool
buffer stream reader writer encode decode codec json yaml toml xml csv
image icon font style theme layout render widget button form input
table list map set heap graph edge vertex matrix vector math rand hash
crypto cipher key keys sign verify cert tls ssh shell cmd cli flag
flags env version release deploy docker ci lint format check fix
errors error panic recover retry backoff limit quota page pages query
sql db migrate seed dump load save export import plugin plugins hook
hooks event events bus signal notify mail sms push ws socket conn dial
`)

var exts = []struct {
	ext    string
	weight int
	binary bool
}{
	{".go", 20, false}, {".c", 6, false}, {".h", 5, false}, {".py", 8, false},
	{".js", 7, false}, {".ts", 5, false}, {".md", 6, false}, {".txt", 5, false},
	{".json", 6, false}, {".yaml", 4, false}, {".html", 3, false}, {".css", 2, false},
	{".rs", 4, false}, {".java", 4, false}, {".proto", 2, false}, {".toml", 1, false},
	{".png", 2, true}, {".bin", 1, true}, {".sh", 3, false}, {"", 2, false},
}

func (g *gen) ext() (string, bool) {
	total := 0
	for _, e := range exts {
		total += e.weight
	}
	k := g.r.intn(total)
	for _, e := range exts {
		if k < e.weight {
			return e.ext, e.binary
		}
		k -= e.weight
	}
	return ".txt", false
}

// uniqueName returns base, or base with a numeric suffix, not yet used in dir.
func uniqueName(dir *node, base, ext string) string {
	name := base + ext
	for i := 2; dir.names[name]; i++ {
		name = fmt.Sprintf("%s%d%s", base, i, ext)
	}
	return name
}

func (g *gen) add(dir *node, n *node) *node {
	if dir.names[n.name] {
		panic("duplicate name " + n.name + " in " + dir.path())
	}
	n.parent = dir
	n.depth = dir.depth + 1
	dir.names[n.name] = true
	dir.children = append(dir.children, n)
	if n.isDir {
		n.names = map[string]bool{}
		g.dirs = append(g.dirs, n)
	}
	return n
}

func (g *gen) mkdir(dir *node, name string, fixed bool) *node {
	return g.add(dir, &node{name: uniqueName(dir, name, ""), isDir: true, fixed: fixed})
}

// lookupDir returns the directory at p, creating the missing levels.
func (g *gen) lookupDir(p string) *node {
	d := g.root
	for _, c := range strings.Split(p, "/") {
		var next *node
		for _, ch := range d.children {
			if ch.name == c && ch.isDir {
				next = ch
			}
		}
		if next == nil {
			next = g.mkdir(d, c, false)
		}
		d = next
	}
	return d
}

func (g *gen) baseName() string {
	switch g.r.intn(6) {
	case 0:
		return g.r.pick(words)
	case 1:
		return g.r.pick(words) + "-" + g.r.pick(words)
	case 2:
		return fmt.Sprintf("%s%d", g.r.pick(words), g.r.intn(100))
	default:
		return g.r.pick(words) + "_" + g.r.pick(words)
	}
}

// size draws a file size from a table shaped like a source tree: median
// about 3 KiB, a tail to 200 KiB.
func (g *gen) size() int {
	if g.r.intn(1000) < g.shape.EmptyPerM {
		return 0
	}
	k := g.r.intn(1000)
	switch {
	case k < 150:
		return g.r.between(1, 256)
	case k < 340:
		return g.r.between(257, 1024)
	case k < 650:
		return g.r.between(1025, 4096)
	case k < 890:
		return g.r.between(4097, 16384)
	case k < 988:
		return g.r.between(16385, 65536)
	default:
		return g.r.between(65537, 200<<10)
	}
}

func (g *gen) file(dir *node, base, ext string, binary bool) *node {
	f := &node{name: uniqueName(dir, base, ext), mode: "100644", size: g.size(), binary: binary}
	if ext == ".sh" || (ext == "" && g.r.intn(3) == 0) || g.r.intn(100) < g.shape.ExecPct {
		f.mode = "100755"
	}
	if len(g.files) > 0 && g.r.intn(100) < g.shape.DupPct {
		src := g.files[g.r.intn(len(g.files))]
		for src.dupOf != nil {
			src = src.dupOf
		}
		f.dupOf, f.size, f.binary = src, src.size, src.binary
	}
	g.add(dir, f)
	g.files = append(g.files, f)
	return f
}

func (g *gen) randomFile(dir *node) *node {
	ext, bin := g.ext()
	return g.file(dir, g.baseName(), ext, bin)
}

func (g *gen) build() error {
	s := g.shape
	g.root = &node{isDir: true, names: map[string]bool{}}
	g.dirs = []*node{g.root}
	for _, t := range s.TopDirs {
		g.mkdir(g.root, t, false)
	}
	for _, f := range s.RootFiles {
		g.file(g.root, f, "", false).mode = "100644"
	}

	// The big directories.
	for i, n := range s.FlatBig {
		d := g.lookupDir(s.BigNames[i])
		d.fixed = true
		for j := 0; j < n; j++ {
			ext, bin := g.ext()
			g.file(d, fmt.Sprintf("%s-%05d", g.r.pick(words), j), ext, bin)
		}
	}
	if s.DirBig > 0 {
		d := g.lookupDir(s.BigNames[len(s.FlatBig)])
		d.fixed = true
		for j := 0; j < s.DirBig; j++ {
			p := g.mkdir(d, fmt.Sprintf("%s-%s", g.r.pick(words), g.r.pick(words)), true)
			g.file(p, "package", ".json", false)
			for k := g.r.intn(3); k > 0; k-- {
				g.randomFile(p)
			}
		}
	}
	if len(g.dirs)-1 > s.Dirs || len(g.files) > s.Files {
		return fmt.Errorf("shape: the fixed parts (%d dirs, %d files) exceed the totals", len(g.dirs)-1, len(g.files))
	}

	// The random tree: each new directory goes under the shallower of two
	// random candidates, which keeps most of the tree at levels 2-6 and
	// still reaches MaxDepth.
	growable := func(d *node) bool { return !d.fixed && d.depth < s.MaxDepth }
	for tries := 0; len(g.dirs)-1 < s.Dirs; tries++ {
		if tries > 100*s.Dirs {
			return errors.New("shape: cannot place the directories")
		}
		a, b := g.dirs[g.r.intn(len(g.dirs))], g.dirs[g.r.intn(len(g.dirs))]
		if b.depth < a.depth {
			a = b
		}
		if !growable(a) {
			continue
		}
		g.mkdir(a, g.baseName(), false)
	}
	// One chain all the way down to MaxDepth, so the deepest level exists.
	d := g.lookupDir(s.TopDirs[0])
	for d.depth < s.MaxDepth {
		d = g.mkdir(d, "deep", false)
	}
	// (the chain may overshoot Dirs by a few; take them back from the leaves)
	for len(g.dirs)-1 > s.Dirs {
		if !g.dropLeafDir() {
			break
		}
	}

	// Git cannot store an empty directory: every leaf gets one file.
	for _, d := range g.dirs {
		if !d.fixed && d.depth > 0 && len(d.children) == 0 {
			g.randomFile(d)
		}
	}
	// The other files go into the non-fixed directories, with a skewed
	// weight per directory: many small directories, a few with dozens.
	var open []*node
	var cum []int
	total := 0
	for _, d := range g.dirs {
		if d.fixed {
			continue
		}
		w := []int{1, 1, 2, 2, 3, 4, 6, 10, 16, 30}[g.r.intn(10)]
		if d.depth == 0 {
			w = 1
		}
		total += w
		open = append(open, d)
		cum = append(cum, total)
	}
	for len(g.files) < s.Files-s.Large {
		k := g.r.intn(total)
		i := sort.SearchInts(cum, k+1)
		g.randomFile(open[i])
	}
	for i := 0; i < s.Large; i++ {
		f := g.file(open[g.r.intn(len(open))], fmt.Sprintf("large-%s", g.r.pick(words)), ".bin", true)
		f.dupOf, f.binary = nil, true
		f.size = g.r.between(300<<10, 3<<20)
	}

	if s.Special {
		g.specialNames()
	}
	return g.symlinks()
}

// dropLeafDir removes the last-created empty, non-fixed directory that is
// not on the deep chain.
func (g *gen) dropLeafDir() bool {
	for i := len(g.dirs) - 1; i > 0; i-- {
		d := g.dirs[i]
		if d.fixed || len(d.children) > 0 || d.name == "deep" {
			continue
		}
		p := d.parent
		for j, c := range p.children {
			if c == d {
				p.children = append(p.children[:j], p.children[j+1:]...)
				break
			}
		}
		delete(p.names, d.name)
		g.dirs = append(g.dirs[:i], g.dirs[i+1:]...)
		return true
	}
	return false
}

// specialNames renames a few files to names that stress XDR and clients.
// The count of files does not change.
func (g *gen) specialNames() {
	long := strings.Repeat("long_name_", 25) + "end.txt" // 257 bytes: cut below
	long = long[:251] + ".txt"                           // 255 bytes, the limit
	names := []string{
		"with space.txt", "two  spaces and tab\there.md", "-leading-dash.txt",
		".hidden", "ünïcödé-名前.md", "semi;colon&amp.txt", "quote'single.txt",
		"UPPER.TXT", "upper.txt", "back\\slash.txt", "star*q?.txt", long,
	}
	for i, nm := range names {
		f := g.files[(i*7919+13)%len(g.files)]
		if f.parent.names[nm] {
			continue
		}
		delete(f.parent.names, f.name)
		f.name = nm
		f.parent.names[nm] = true
	}
}

// rel returns the relative path from directory from to target.
func rel(from, target string) string {
	fp := strings.Split(from, "/")
	tp := strings.Split(target, "/")
	if from == "" {
		fp = nil
	}
	i := 0
	for i < len(fp) && i < len(tp) && fp[i] == tp[i] {
		i++
	}
	var parts []string
	for j := i; j < len(fp); j++ {
		parts = append(parts, "..")
	}
	parts = append(parts, tp[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

func (g *gen) symlinks() error {
	n := g.shape.Symlinks
	for i := 0; i < n; i++ {
		dir := g.dirs[g.r.intn(len(g.dirs))]
		l := &node{mode: "120000"}
		var base string
		switch k := i % 20; {
		case i == n-1: // a self-loop
			base = "loop"
			l.name = uniqueName(dir, base, "")
			l.target = l.name
		case i == n-2 && len(g.links) > 0: // a chain: a link to a link
			t := g.links[len(g.links)-1]
			base = "chain"
			l.target = rel(dir.path(), t.path())
		case i == n-3: // absolute
			base = "abs"
			l.target = "/usr/share/doc"
		case k < 10: // a file
			t := g.files[g.r.intn(len(g.files))]
			base = "link-" + strings.TrimSuffix(t.name, path.Ext(t.name))
			if len(base) > 60 {
				base = base[:60]
			}
			l.target = rel(dir.path(), t.path())
		case k < 15: // a directory
			t := g.dirs[1+g.r.intn(len(g.dirs)-1)]
			base = "dir-" + t.name
			l.target = rel(dir.path(), t.path())
		default: // dangling
			base = "dangling-" + g.r.pick(words)
			l.target = rel(dir.path(), path.Join(g.dirs[g.r.intn(len(g.dirs))].path(), "missing-"+g.r.pick(words)))
		}
		if l.name == "" {
			l.name = uniqueName(dir, base, "")
		}
		if l.target == "" || l.target == "." {
			l.target = "./"
		}
		g.add(dir, l)
		g.links = append(g.links, l)
	}
	return nil
}

// content writes the bytes of f: text made of words for text files,
// pseudo-random bytes for binary ones, both seeded by the path.
func content(seed uint64, f *node, buf *bytes.Buffer) {
	buf.Reset()
	if f.dupOf != nil {
		f = f.dupOf
	}
	r := &rng{s: fnv64(seed, f.path())}
	if f.binary {
		var b [8]byte
		for buf.Len() < f.size {
			v := r.next()
			for i := range b {
				b[i] = byte(v >> (8 * i))
			}
			buf.Write(b[:])
		}
		buf.Truncate(f.size)
		return
	}
	col := 0
	for buf.Len() < f.size {
		w := words[r.intn(len(words))]
		buf.WriteString(w)
		col += len(w)
		switch {
		case col > 40+r.intn(60):
			buf.WriteByte('\n')
			col = 0
			if r.intn(4) == 0 {
				buf.WriteString("\t")
			}
		case r.intn(9) == 0:
			buf.WriteString("(); ")
			col += 4
		default:
			buf.WriteByte(' ')
			col++
		}
	}
	buf.Truncate(f.size)
}

// writeStream writes the fast-import stream: the blobs (each distinct
// content once), then one commit naming every file and symlink.
func (g *gen) writeStream(w io.Writer, seed uint64) (blobs int, bytesOut int64, err error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	marks := map[*node]int{}
	var buf bytes.Buffer
	mark := 0
	emptyMark := 0
	for _, f := range g.files {
		src := f
		if f.dupOf != nil {
			src = f.dupOf
		}
		if m, ok := marks[src]; ok {
			marks[f] = m
			continue
		}
		if src.size == 0 && emptyMark != 0 {
			marks[f], marks[src] = emptyMark, emptyMark
			continue
		}
		content(seed, src, &buf)
		mark++
		fmt.Fprintf(bw, "blob\nmark :%d\ndata %d\n", mark, buf.Len())
		bw.Write(buf.Bytes())
		bw.WriteByte('\n')
		bytesOut += int64(buf.Len())
		marks[src], marks[f] = mark, mark
		if src.size == 0 {
			emptyMark = mark
		}
	}
	blobs = mark
	msg := fmt.Sprintf("generated tree (seed %d)\n", seed)
	fmt.Fprintf(bw, "commit refs/heads/main\nmark :%d\n", mark+1)
	fmt.Fprintf(bw, "author genrepo <genrepo@example.invalid> 1700000000 +0000\n")
	fmt.Fprintf(bw, "committer genrepo <genrepo@example.invalid> 1700000000 +0000\n")
	fmt.Fprintf(bw, "data %d\n%s", len(msg), msg)
	for _, f := range g.files {
		fmt.Fprintf(bw, "M %s :%d %s\n", f.mode, marks[f], quotePath(f.path()))
	}
	for _, l := range g.links {
		fmt.Fprintf(bw, "M 120000 inline %s\ndata %d\n%s\n", quotePath(l.path()), len(l.target), l.target)
	}
	fmt.Fprintf(bw, "\ndone\n")
	return blobs, bytesOut, bw.Flush()
}

// quotePath C-quotes a path for fast-import when it needs it.
func quotePath(p string) string {
	if !strings.ContainsAny(p, "\"\\\n\t") {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func git(dir string, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Generate builds the tree for shape and seed and writes it as a git
// repository at dir. It returns the facts printed by the command.
func Generate(dir string, shape Shape, seed uint64, bare bool) (map[string]string, error) {
	t0 := time.Now()
	g := &gen{r: &rng{s: seed}, shape: shape}
	if err := g.build(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return nil, err
	} else if len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty", dir)
	}
	args := []string{"init", "-q", "-b", "main"}
	if bare {
		args = append(args, "--bare")
	}
	if _, err := git(dir, nil, args...); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	type res struct {
		blobs int
		n     int64
		err   error
	}
	done := make(chan res, 1)
	go func() {
		b, n, err := g.writeStream(pw, seed)
		pw.CloseWithError(err)
		done <- res{b, n, err}
	}()
	_, ferr := git(dir, pr, "-c", "pack.compression=1", "fast-import", "--quiet", "--done", "--date-format=raw")
	pr.CloseWithError(errors.New("fast-import exited"))
	r := <-done
	if ferr != nil {
		return nil, ferr
	}
	if r.err != nil {
		return nil, r.err
	}
	commit, err := git(dir, nil, "rev-parse", "refs/heads/main")
	if err != nil {
		return nil, err
	}
	tree, err := git(dir, nil, "rev-parse", "refs/heads/main^{tree}")
	if err != nil {
		return nil, err
	}
	maxDepth := 0
	execs := 0
	for _, d := range g.dirs {
		maxDepth = max(maxDepth, d.depth)
	}
	for _, f := range g.files {
		if f.mode == "100755" {
			execs++
		}
	}
	bigDirs := 0
	for _, d := range g.dirs {
		if len(d.children) >= 1000 {
			bigDirs++
		}
	}
	return map[string]string{
		"commit": commit, "tree": tree,
		"dirs": fmt.Sprint(len(g.dirs) - 1), "files": fmt.Sprint(len(g.files)),
		"symlinks": fmt.Sprint(len(g.links)), "executables": fmt.Sprint(execs),
		"blobs": fmt.Sprint(r.blobs), "blob_bytes": fmt.Sprint(r.n),
		"max_depth": fmt.Sprint(maxDepth), "dirs_1k_entries": fmt.Sprint(bigDirs),
		"wall_ms": fmt.Sprint(time.Since(t0).Milliseconds()),
	}, nil
}

func main() {
	out := flag.String("o", "", "directory to create the repository in (must be empty or absent)")
	shapeName := flag.String("shape", "full", "full (about 17k files, 4.3k dirs) or tiny (a few hundred entries)")
	seed := flag.Uint64("seed", 1, "seed; the same seed gives the same commit")
	bare := flag.Bool("bare", false, "create a bare repository")
	flag.Parse()
	shape, ok := shapes[*shapeName]
	if *out == "" || !ok || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genrepo -o DIR [-shape full|tiny] [-seed N] [-bare]")
		os.Exit(2)
	}
	facts, err := Generate(*out, shape, *seed, *bare)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genrepo:", err)
		os.Exit(1)
	}
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var line []string
	line = append(line, "repo="+*out, "shape="+*shapeName, fmt.Sprintf("seed=%d", *seed))
	for _, k := range keys {
		line = append(line, k+"="+facts[k])
	}
	fmt.Println(strings.Join(line, " "))
}
