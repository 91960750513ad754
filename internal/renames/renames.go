// Package renames is git's rename detection as merge-ort runs it: a port of
// diffcore_rename_extended (diffcore-rename.c) and of the similarity
// estimate in diffcore-delta.c, git 2.39, for a rename-only detection
// (no copies, no break detection) with empty files excluded
// (merge-ort sets rename_empty = 0).
//
// Steps, in git's order:
//
//  1. exact renames: a destination takes a source with the same blob id
//     (non-regular files need the same mode too), preferring an unused
//     source with the same basename among the first 100 candidates; all
//     sources take part, relevant or not;
//  2. basename matches: a source whose basename is unique among the
//     remaining sources, and a destination whose basename is unique among
//     the remaining destinations, are paired if their similarity reaches
//     minScore + (MaxScore-minScore)/2; only relevant sources are tried,
//     but irrelevant ones still count for uniqueness;
//  3. the remaining sources are culled to the relevant ones, the rename
//     limit is checked (destinations × sources ≤ limit²);
//  4. inexact renames: every remaining destination keeps its 4 best
//     sources, all candidates are sorted by score and basename equality
//     (stable, so destination order then candidate slot order break ties),
//     and pairs are taken greedily.
//
// With merge-ort's directory hints (Options.DirsRemoved, and Relevant:
// diffcore_rename_extended's dirs_removed and relevant_sources), two more
// things happen, as in git:
//
//   - after exact renames, each removed directory's most frequent
//     destination directory among them is its guess (dir_rename_guess);
//     in step 2 a relevant source whose basename is not unique among the
//     sources, or not unique among the destinations, is tried (with the
//     same threshold) against the unpaired destination with its basename
//     in the guessed directory, if there is one;
//   - after step 3, a source wanted only for where its directory went
//     (Options.LocationOnly) is dropped when no removed directory on its
//     way up still needs its own rename found: those whose destination
//     already has a majority that the sources left cannot overturn count
//     as decided (handle_early_known_dir_renames).
//
// Without DirsRemoved and Relevant, Detect behaves as diffcore_rename
// does, which is also what `git diff-tree -M` does. Not ported: copies,
// break detection and merge-ort's cached_pairs (which only a sequence of
// merges, as in a rebase, fills).
package renames

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// File is one side of a candidate pair: a path deleted (source) or added (destination).
type File struct {
	Path string
	Hash plumbing.Hash
	Mode uint32 // git mode: 0100644, 0100755, 0120000, 0160000
}

// Pair is a detected rename.
type Pair struct {
	Src, Dst File
	Score    int // git's score, MaxScore for exact renames
}

// MaxScore is git's MAX_SCORE: a score of MaxScore means identical content.
const MaxScore = 60000

// Options tune Detect the way merge-ort's diff options tune diffcore_rename.
type Options struct {
	// MinScore is the minimum similarity (git's rename_score); 0 (or
	// less) means git's default of 50%, MaxScore/2. MinScore >= MaxScore
	// detects exact renames only.
	MinScore int
	// Limit is the rename limit (merge.renameLimit / diff.renameLimit).
	// 0 (or less) means merge-ort's default of 7000, as merge-ort replaces
	// any limit <= 0 by 7000. Inexact detection is skipped when, after
	// exact and basename matches and relevance culling,
	// destinations*sources > Limit*Limit.
	Limit int
	// Relevant, when non-nil, says which sources merge-ort wants renames
	// for (relevant_sources); nil means all. Irrelevant sources still take
	// part in exact renames and still make a basename non-unique in the
	// basename step, but are not tried by the basename step and are
	// removed before the rename limit check and inexact detection.
	// (merge-ort does not call diffcore_rename at all when no source is
	// relevant, so not even exact renames are found then; Detect leaves
	// that decision to its caller.)
	Relevant func(path string) bool
	// Read returns a blob's content. It is called only by the basename
	// and inexact steps, and only for regular files; the blob size is
	// len(content).
	Read func(plumbing.Hash) ([]byte, error)
	// DirsRemoved, when non-nil, is merge-ort's dirs_removed for this
	// side: every directory the side removed, with its relevance
	// (NotRelevant, RelevantForAncestor, RelevantForSelf). It enables the
	// directory hints of the package comment; Detect does not modify it.
	// (merge-ort always passes it, with Relevant; Relevant alone enables
	// the basename guess too, from the relevant sources' directories, as
	// in git.)
	DirsRemoved map[string]int
	// LocationOnly, used with DirsRemoved and Relevant, says which
	// relevant sources merge-ort wants only to find where their
	// directory went (RELEVANT_LOCATION: the other side did not change
	// them); the others are wanted for their content (RELEVANT_CONTENT).
	// nil means none is location-only.
	LocationOnly func(path string) bool
	// DeferredDirs are the directories merge-ort's tree walk deferred for
	// this side (one side left them as in the base, or only this side
	// has them: collect_merge_info_callback's possible_trivial_merges),
	// in the order the walk met them. merge-ort walks them after
	// everything else (handle_deferred_entries), one after the other in
	// the order of git's hash map, so the sources and destinations below
	// them come last, in that order, in diffcore's queue; the queue
	// order decides ties in every step. None is below another.
	DeferredDirs []string
}

// Detect pairs sources with destinations as diffcore_rename does: exact
// renames first, then basename matches, then inexact similarity; each source
// and destination in at most one pair. The result is sorted by Dst.Path.
//
// Sources and destinations are first put in diffcore's queue order: by
// path (byte order), which is the order of git's tree walk, except that
// those below Options.DeferredDirs come last; the caller's order does not
// matter. Entries whose blob is the empty blob are dropped (merge-ort's
// rename_empty = 0).
func Detect(sources, dests []File, opts Options) ([]Pair, error) {
	d := &detector{opts: opts, blobs: map[plumbing.Hash]*blob{}, given: sources}
	d.minScore = opts.MinScore
	if d.minScore <= 0 {
		d.minScore = defaultRenameScore
	}
	if d.minScore > MaxScore {
		d.minScore = MaxScore
	}
	for _, f := range sources {
		if f.Hash != emptyBlob {
			d.src = append(d.src, &source{File: f})
		}
	}
	for _, f := range dests {
		if f.Hash != emptyBlob {
			d.dst = append(d.dst, &dest{File: f})
		}
	}
	rank := deferredRank(opts.DeferredDirs)
	for _, s := range d.src {
		s.turn = queueTurn(rank, s.Path)
	}
	for _, t := range d.dst {
		t.turn = queueTurn(rank, t.Path)
	}
	sort.SliceStable(d.src, func(i, j int) bool {
		a, b := d.src[i], d.src[j]
		return a.turn < b.turn || a.turn == b.turn && a.Path < b.Path
	})
	sort.SliceStable(d.dst, func(i, j int) bool {
		a, b := d.dst[i], d.dst[j]
		return a.turn < b.turn || a.turn == b.turn && a.Path < b.Path
	})
	if err := d.run(); err != nil {
		return nil, err
	}
	var out []Pair
	for _, t := range d.dst {
		if t.pair != nil {
			out = append(out, Pair{Src: t.pair.File, Dst: t.File, Score: t.score})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dst.Path < out[j].Dst.Path })
	return out, nil
}

// deferredRank maps each deferred directory to its turn in
// handle_deferred_entries (from 1): the iteration order of the strintmap
// possible_trivial_merges they were inserted into.
func deferredRank(dirs []string) map[string]int {
	if len(dirs) == 0 {
		return nil
	}
	rank := map[string]int{}
	for i, d := range strmapOrder(dirs) {
		rank[d] = i + 1
	}
	return rank
}

// queueTurn is the turn of the deferred directory above path, 0 if none.
func queueTurn(rank map[string]int, path string) int {
	if rank == nil {
		return 0
	}
	for d := dirname(path); d != ""; d = dirname(d) {
		if r, ok := rank[d]; ok {
			return r
		}
	}
	return 0
}

const (
	defaultRenameScore = MaxScore / 2 // DEFAULT_RENAME_SCORE
	mergeOrtLimit      = 7000         // detect_regular_renames' default
	candidatesPerDst   = 4            // NUM_CANDIDATE_PER_DST
	identicalTries     = 100          // find_identical_files' "Pick one" budget
	// keepLimit: blobs larger than this are not kept in memory between
	// the size check and the chunk hashing; they are read again instead.
	keepLimit = 1 << 20
)

// emptyBlob is the id of the empty blob (is_empty_blob_oid).
var emptyBlob = plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")

type source struct {
	File
	used bool // rename_used
	turn int  // 0, or the turn of its deferred directory
}

type dest struct {
	File
	pair  *source // non-nil once renamed (is_rename)
	score int
	turn  int
}

type blob struct {
	size   uint64
	data   []byte // kept until hashed, if small
	spans  []span
	hashed bool
}

type detector struct {
	opts     Options
	minScore int
	src      []*source // rename_src, culled as git culls it
	dst      []*dest   // rename_dst
	blobs    map[plumbing.Hash]*blob
	given    []File // the sources as given, empty ones included
}

func (d *detector) run() error {
	if len(d.dst) == 0 || len(d.src) == 0 {
		return nil
	}
	renamed := d.findExactRenames()
	if d.minScore == MaxScore {
		return nil // only exact renames wanted
	}

	// Basename step, with git's threshold halfway between the minimum
	// score and MAX_SCORE (GIT_BASENAME_FACTOR is not honoured).
	minBasename := d.minScore + int(0.5*float64(MaxScore-d.minScore))
	d.removeUnneededSources(nil)
	info := d.initDirInfo(d.given)
	n, err := d.findBasenameMatches(minBasename, info)
	if err != nil {
		return err
	}
	renamed += n
	d.removeUnneededSources(d.opts.Relevant)
	d.handleEarlyKnownDirRenames(info)

	numDst := len(d.dst) - renamed
	numSrc := len(d.src)
	if numDst == 0 || numSrc == 0 {
		return nil
	}
	if d.tooManyCandidates(numDst, numSrc) {
		return nil
	}
	return d.findInexactRenames(numDst)
}

// record is record_rename_pair.
func (d *detector) record(t *dest, s *source, score int) {
	if t.pair != nil {
		panic("renames: internal error: dst already matched")
	}
	s.used = true
	t.pair = s
	if s.Path == t.Path {
		// git keeps the source's break score here, which is 0 without
		// break detection.
		score = 0
	}
	t.score = score
}

// basenameSame is git's basename_same: equal after the last slash.
func basenameSame(a, b string) bool {
	return basename(a) == basename(b)
}

// basename is get_basename: what follows the last slash.
func basename(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

func isRegular(mode uint32) bool { return mode&0170000 == 0100000 }

// identicalCandidates returns, for each blob id, the sources with that id
// in the order find_identical_files visits them. git inserts the sources
// into its hashmap from the last to the first, each at the head of its
// bucket, so a lookup meets them in ascending order; but if the table grows
// while filling (hashmap_init sizes it for all sources, yet for some counts,
// e.g. 205 or 3277, the last insertion crosses the 80% load factor), the
// rehash reverses every bucket chain, entries inserted before it come back
// in descending order behind the later ones.
func (d *detector) identicalCandidates() map[plumbing.Hash][]int {
	n := uint64(len(d.src))
	// hashmap_init: HASHMAP_INITIAL_SIZE 64, load factor 80%, grows by 4.
	size := uint64(64)
	for initial := n * 100 / 80; initial > size; {
		size <<= 2
	}
	growAt := size * 80 / 100
	// chains hold each list reversed: the head is the last element.
	chains := map[plumbing.Hash][]int{}
	count := uint64(0)
	for i := len(d.src) - 1; i >= 0; i-- {
		h := d.src[i].Hash
		chains[h] = append(chains[h], i)
		count++
		if count > growAt {
			for _, c := range chains {
				reverse(c)
			}
			size <<= 2
			growAt = size * 80 / 100
		}
	}
	for _, c := range chains {
		reverse(c)
	}
	return chains
}

func reverse(s []int) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// findExactRenames is find_exact_renames / find_identical_files (rename
// detection, not copies: a used source is never taken twice).
func (d *detector) findExactRenames() int {
	chains := d.identicalCandidates()
	renames := 0
	for _, t := range d.dst {
		var best *source
		bestScore := -1
		tries := identicalTries
		for _, i := range chains[t.Hash] {
			s := d.src[i]
			// Non-regular files: the modes must match.
			if (!isRegular(s.Mode) || !isRegular(t.Mode)) && s.Mode != t.Mode {
				continue
			}
			if s.used {
				continue
			}
			score := 1
			if basenameSame(s.Path, t.Path) {
				score++
			}
			if score > bestScore {
				best, bestScore = s, score
				if score == 2 {
					break
				}
			}
			// Too many identical alternatives? Pick one.
			tries--
			if tries == 0 {
				break
			}
		}
		if best != nil {
			d.record(t, best, MaxScore)
			renames++
		}
	}
	return renames
}

// removeUnneededSources is remove_unneeded_paths_from_src for rename
// detection: drop used sources, and sources not relevant when relevant is
// non-nil.
func (d *detector) removeUnneededSources(relevant func(string) bool) {
	kept := d.src[:0]
	for _, s := range d.src {
		if s.used {
			continue
		}
		if relevant != nil && !relevant(s.Path) {
			continue
		}
		kept = append(kept, s)
	}
	d.src = kept
}

// findBasenameMatches is find_basename_matches: a source and a
// destination whose basenames are unique among the remaining sources and
// destinations are compared; otherwise the directory guess of info (nil:
// none) may name the destination to compare with.
func (d *detector) findBasenameMatches(minScore int, info *dirInfo) (int, error) {
	srcIdx := map[string]int{}
	for i, s := range d.src {
		b := basename(s.Path)
		if _, dup := srcIdx[b]; dup {
			srcIdx[b] = -1
		} else {
			srcIdx[b] = i
		}
	}
	dstIdx := map[string]int{}
	for i, t := range d.dst {
		if t.pair != nil {
			continue
		}
		b := basename(t.Path)
		if _, dup := dstIdx[b]; dup {
			dstIdx[b] = -1
		} else {
			dstIdx[b] = i
		}
	}
	renames := 0
	for i, s := range d.src {
		if d.opts.Relevant != nil && !d.opts.Relevant(s.Path) {
			continue
		}
		b := basename(s.Path)
		di, ok := dstIdx[b]
		if !ok {
			continue
		}
		if srcIdx[b] != i || di < 0 {
			// Not unique: where did the directory go?
			di = info.possibleRename(s.Path)
			if di < 0 {
				continue
			}
		}
		t := d.dst[di]
		if t.pair != nil {
			continue
		}
		score, err := d.estimateSimilarity(s.File, t.File, minScore)
		if err != nil {
			return renames, err
		}
		if score < minScore {
			continue
		}
		d.record(t, s, score)
		renames++
		info.update(s.Path, t.Path)
	}
	return renames, nil
}

// tooManyCandidates is too_many_rename_candidates without -C -C.
func (d *detector) tooManyCandidates(numDst, numSrc int) bool {
	limit := d.opts.Limit
	if limit <= 0 {
		limit = mergeOrtLimit
	}
	return uint64(numDst)*uint64(numSrc) > uint64(limit)*uint64(limit)
}

// diffScore is git's struct diff_score: one candidate of the matrix.
type diffScore struct {
	src, dst  int // indexes in d.src / d.dst; dst < 0: unused slot
	score     int
	nameScore int
}

// scoreCompare is git's score_compare: negative when a sorts first.
func scoreCompare(a, b *diffScore) int {
	// Sink the unused ones to the bottom.
	if a.dst < 0 {
		if b.dst >= 0 {
			return 1
		}
		return 0
	}
	if b.dst < 0 {
		return -1
	}
	if a.score == b.score {
		return b.nameScore - a.nameScore
	}
	return b.score - a.score
}

// recordIfBetter is git's record_if_better: replace the worst of the
// destination's slots (the first one among equally bad) if o beats it.
func recordIfBetter(m []diffScore, o diffScore) {
	worst := 0
	for i := 1; i < len(m); i++ {
		if scoreCompare(&m[i], &m[worst]) > 0 {
			worst = i
		}
	}
	if scoreCompare(&m[worst], &o) > 0 {
		m[worst] = o
	}
}

// findInexactRenames is the similarity matrix of diffcore_rename_extended
// and find_renames (copies = 0).
func (d *detector) findInexactRenames(numDst int) error {
	mx := make([]diffScore, 0, numDst*candidatesPerDst)
	for i, t := range d.dst {
		if t.pair != nil {
			continue // exact or basename match already handled
		}
		start := len(mx)
		for j := 0; j < candidatesPerDst; j++ {
			mx = append(mx, diffScore{src: -1, dst: -1})
		}
		m := mx[start:]
		for j, s := range d.src {
			score, err := d.estimateSimilarity(s.File, t.File, d.minScore)
			if err != nil {
				return err
			}
			ns := 0
			if basenameSame(s.Path, t.Path) {
				ns = 1
			}
			recordIfBetter(m, diffScore{src: j, dst: i, score: score, nameScore: ns})
		}
	}
	// git's STABLE_QSORT: most to least similar, ties in matrix order.
	sort.SliceStable(mx, func(a, b int) bool { return scoreCompare(&mx[a], &mx[b]) < 0 })
	for k := range mx {
		c := &mx[k]
		if c.dst < 0 || c.score < d.minScore {
			break // no more usable pair
		}
		t := d.dst[c.dst]
		if t.pair != nil {
			continue
		}
		s := d.src[c.src]
		if s.used {
			continue
		}
		d.record(t, s, c.score)
	}
	return nil
}

// estimateSimilarity is git's estimate_similarity: how much of dst's
// content comes from src, between 0 and MaxScore. Only regular files are
// ever similar; pairs whose sizes differ too much for minScore to be
// reachable are not compared (and score 0).
func (d *detector) estimateSimilarity(src, dst File, minScore int) (int, error) {
	if !isRegular(src.Mode) || !isRegular(dst.Mode) {
		return 0, nil
	}
	sb, err := d.load(src.Hash)
	if err != nil {
		return 0, err
	}
	db, err := d.load(dst.Hash)
	if err != nil {
		return 0, err
	}
	if !sizesCompatible(sb.size, db.size, minScore) {
		return 0, nil
	}
	if err := d.hash(src.Hash, sb); err != nil {
		return 0, err
	}
	if err := d.hash(dst.Hash, db); err != nil {
		return 0, err
	}
	return similarity(sb.spans, db.spans, sb.size, db.size), nil
}

// sizesCompatible is estimate_similarity's early exit: the size change
// must stay below (MaxScore-minScore)/MaxScore of the larger size. It also
// rejects two empty blobs, for which the score below would divide by 0.
func sizesCompatible(srcSize, dstSize uint64, minScore int) bool {
	maxSize, baseSize := srcSize, dstSize
	if baseSize > maxSize {
		maxSize, baseSize = baseSize, maxSize
	}
	delta := maxSize - baseSize
	return !(maxSize*uint64(MaxScore-minScore) < delta*MaxScore)
}

// similarity is the final division of estimate_similarity.
func similarity(src, dst []span, srcSize, dstSize uint64) int {
	if dstSize == 0 {
		return 0 // "should not happen"
	}
	maxSize := srcSize
	if dstSize > maxSize {
		maxSize = dstSize
	}
	copied, _ := countChanges(src, dst)
	return int(copied * MaxScore / maxSize)
}

var errNoRead = errors.New("renames: Options.Read is nil but blob content is needed")

func (d *detector) read(h plumbing.Hash) ([]byte, error) {
	if d.opts.Read == nil {
		return nil, errNoRead
	}
	data, err := d.opts.Read(h)
	if err != nil {
		return nil, fmt.Errorf("renames: reading blob %s: %w", h, err)
	}
	return data, nil
}

// load returns the blob's record with its size known.
func (d *detector) load(h plumbing.Hash) (*blob, error) {
	if b, ok := d.blobs[h]; ok {
		return b, nil
	}
	data, err := d.read(h)
	if err != nil {
		return nil, err
	}
	b := &blob{size: uint64(len(data))}
	if len(data) <= keepLimit {
		b.data = data
	}
	d.blobs[h] = b
	return b, nil
}

// hash fills the blob's chunk counts (git's cnt_data) and drops its bytes.
func (d *detector) hash(h plumbing.Hash, b *blob) error {
	if b.hashed {
		return nil
	}
	data := b.data
	if data == nil && b.size > 0 {
		var err error
		if data, err = d.read(h); err != nil {
			return err
		}
	}
	b.spans = hashChars(data)
	b.hashed = true
	b.data = nil
	return nil
}
