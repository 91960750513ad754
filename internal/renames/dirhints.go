package renames

// This file is merge-ort's directory hints inside diffcore_rename_extended
// (diffcore-rename.c, git 2.39): initialize_dir_rename_info,
// update_dir_rename_counts, idx_possible_rename and
// handle_early_known_dir_renames.

// Directory relevance, the values of Options.DirsRemoved (merge-ort's
// enum dir_rename_relevance).
const (
	// NotRelevant: the directory was removed, but where it went does not
	// matter.
	NotRelevant = 0
	// RelevantForAncestor: where it went matters only to find where an
	// ancestor went.
	RelevantForAncestor = 1
	// RelevantForSelf: the other side added something directly in it.
	RelevantForSelf = 2
)

// dirInfo is git's struct dir_rename_info: the per-directory rename votes
// of the pairs found so far, the best guess per directory made from the
// exact renames, and the destinations still free by path.
type dirInfo struct {
	dirsRemoved map[string]int    // a copy of Options.DirsRemoved (handle_early_known_dir_renames changes it); nil when not given
	relevantDir func(string) bool // relevant_source_dirs
	counts      map[string]*dirCount
	guess       map[string]string // dir_rename_guess
	idx         map[string]int    // idx_map: destination path -> index in d.dst, unpaired after exact renames
}

// dirCount is one directory's strintmap of votes {new directory -> count},
// with its keys in insertion order (git's hash order depends on it) and
// UNKNOWN_DIR's count apart.
type dirCount struct {
	n       map[string]int
	order   []string
	unknown int
}

func (c *dirCount) incr(to string) {
	if _, ok := c.n[to]; !ok {
		c.order = append(c.order, to)
	}
	c.n[to]++
}

// initDirInfo is initialize_dir_rename_info, run after exact renames and
// the removal of their sources. It returns nil when git's info->setup is 0
// (neither dirs_removed nor relevant_sources given).
func (d *detector) initDirInfo(allSources []File) *dirInfo {
	if d.opts.DirsRemoved == nil && d.opts.Relevant == nil {
		return nil
	}
	in := &dirInfo{counts: map[string]*dirCount{}, guess: map[string]string{}, idx: map[string]int{}}
	if d.opts.DirsRemoved != nil {
		in.dirsRemoved = make(map[string]int, len(d.opts.DirsRemoved))
		for k, v := range d.opts.DirsRemoved {
			in.dirsRemoved[k] = v
		}
		in.relevantDir = func(dir string) bool { _, ok := in.dirsRemoved[dir]; return ok }
	} else {
		// relevant_source_dirs: the directories of the relevant sources
		// (all of merge-ort's relevant_sources, empty files included).
		dirs := map[string]bool{}
		for _, f := range allSources {
			if d.opts.Relevant(f.Path) {
				dirs[dirname(f.Path)] = true
			}
		}
		in.relevantDir = func(dir string) bool { return dirs[dir] }
	}
	for i, t := range d.dst {
		if t.pair == nil {
			in.idx[t.Path] = i
			continue
		}
		in.update(t.pair.Path, t.Path)
	}
	// cached_pairs: merge-ort has none within one merge.
	for dir, c := range in.counts {
		in.guess[dir] = c.highest()
	}
	return in
}

// highest is get_highest_rename_path: the first destination with the
// highest count in git's hash order.
func (c *dirCount) highest() string {
	best, max := "", 0
	for _, to := range strmapOrder(c.order) {
		if c.n[to] > max {
			best, max = to, c.n[to]
		}
	}
	return best
}

// update is update_dir_rename_counts: the rename oldname -> newname votes
// for its directory and, while the trailing components agree, for the
// ancestors whose rename matters (RelevantForSelf).
func (in *dirInfo) update(oldname, newname string) {
	if in == nil {
		return
	}
	old, nw := oldname, newname
	first := true
	for {
		oldDir, oldBase := splitPath(old)
		if !in.relevantDir(oldDir) {
			break
		}
		newDir, newBase := splitPath(nw)
		// git compares the component just stripped (it never gets here
		// with the root as old directory: the root is never removed,
		// and without dirs_removed the loop stops after one step).
		if !first && oldBase != newBase {
			break
		}
		rel := in.dirsRemoved[oldDir] // NotRelevant when absent or without dirs_removed
		if rel == RelevantForSelf || first {
			in.count(oldDir).incr(newDir)
		}
		first = false
		if rel == NotRelevant || oldDir == "" || newDir == "" {
			break
		}
		old, nw = oldDir, newDir
	}
}

func (in *dirInfo) count(dir string) *dirCount {
	c := in.counts[dir]
	if c == nil {
		c = &dirCount{n: map[string]int{}}
		in.counts[dir] = c
	}
	return c
}

// possibleRename is idx_possible_rename: the unpaired destination with
// path's basename in the directory where exact renames say path's
// directory went, or -1.
func (in *dirInfo) possibleRename(path string) int {
	if in == nil {
		return -1
	}
	newDir, ok := in.guess[dirname(path)]
	if !ok {
		return -1
	}
	// A guess of the root gives "/name", which no path is.
	if i, ok := in.idx[newDir+"/"+basename(path)]; ok {
		return i
	}
	return -1
}

// alreadyDeterminable is dir_rename_already_determinable: the leading
// destination stays ahead whatever the sources left turn out to be.
func (c *dirCount) alreadyDeterminable() bool {
	first, second := 0, 0
	for _, n := range c.n {
		if n >= first {
			first, second = n, first
		} else if n >= second {
			second = n
		}
	}
	return first > second+c.unknown
}

// handleEarlyKnownDirRenames is handle_early_known_dir_renames: once
// enough renames out of a directory are known to decide where it went,
// the sources wanted only to locate it (and no ancestor still in need) are
// dropped from inexact detection.
func (d *detector) handleEarlyKnownDirRenames(in *dirInfo) {
	if in == nil || in.dirsRemoved == nil || d.opts.Relevant == nil {
		return
	}
	for _, s := range d.src {
		for dir := dirname(s.Path); dir != "" && in.dirsRemoved[dir] != NotRelevant; dir = dirname(dir) {
			in.count(dir).unknown++
		}
	}
	for dir, c := range in.counts {
		if in.dirsRemoved[dir] == RelevantForSelf && c.alreadyDeterminable() {
			in.dirsRemoved[dir] = RelevantForAncestor
		}
	}
	kept := d.src[:0]
	for _, s := range d.src {
		if d.opts.LocationOnly != nil && d.opts.LocationOnly(s.Path) && in.locationKnown(s.Path) {
			continue // RELEVANT_NO_MORE
		}
		kept = append(kept, s)
	}
	d.src = kept
}

// locationKnown: no directory on the way up from path, through removed
// ones still relevant, needs its own rename found.
func (in *dirInfo) locationKnown(path string) bool {
	for dir := dirname(path); ; dir = dirname(dir) {
		switch in.dirsRemoved[dir] {
		case NotRelevant:
			return true
		case RelevantForSelf:
			return false
		}
	}
}

// dirname is get_dirname: what precedes the last slash ("" for none).
func dirname(p string) string {
	d, _ := splitPath(p)
	return d
}

func splitPath(p string) (string, string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// strhash is git's strhash (FNV-1), the hash of strmap keys.
func strhash(s string) uint32 {
	h := uint32(0x811c9dc5)
	for i := 0; i < len(s); i++ {
		h = h*0x01000193 ^ uint32(s[i])
	}
	return h
}

// strmapOrder is the iteration order of a git strmap into which keys were
// inserted in this order (and none removed): hashmap.c's table starts at
// 64 buckets and grows fourfold past 80% load; an entry goes to the head
// of its bucket's chain, and a rehash walks the old buckets in order,
// pushing each entry to the head of its new chain.
func strmapOrder(keys []string) []string {
	size := uint32(64)
	table := make([][]string, size) // chains, head last
	for n, k := range keys {
		b := strhash(k) & (size - 1)
		table[b] = append(table[b], k)
		if uint64(n+1) > uint64(size)*80/100 {
			size <<= 2
			nt := make([][]string, size)
			for _, chain := range table {
				for i := len(chain) - 1; i >= 0; i-- {
					nb := strhash(chain[i]) & (size - 1)
					nt[nb] = append(nt[nb], chain[i])
				}
			}
			table = nt
		}
	}
	out := make([]string, 0, len(keys))
	for _, chain := range table {
		for i := len(chain) - 1; i >= 0; i-- {
			out = append(out, chain[i])
		}
	}
	return out
}
