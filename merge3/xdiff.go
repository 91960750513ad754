package merge3

import (
	"bytes"
	"math"
)

// This file is a line-for-line port of the parts of git's xdiff that
// `git merge-file` uses with its default options (Myers, no whitespace
// flags, no indent heuristic): xdiff/xprepare.c (record classification,
// end trimming, discarding of unmatched records), xdiff/xdiffi.c
// (xdl_split/xdl_recs_cmp with the need_min=0 cost heuristics,
// xdl_change_compact, xdl_build_script). The merge result is only
// byte-identical to git if the two-way diffs are hunk-identical, and any
// "equivalent" diff (same edit distance, other alignment) changes where a
// conflict starts and ends, so the algorithm is ported rather than
// reimplemented. Names follow the C sources so the two can be read side by
// side.

const (
	xdlMaxCostMin  = 256  // XDL_MAX_COST_MIN
	xdlHeurMinCost = 256  // XDL_HEUR_MIN_COST
	xdlSnakeCnt    = 20   // XDL_SNAKE_CNT
	xdlKHeur       = 4    // XDL_K_HEUR
	xdlKpdisRun    = 4    // XDL_KPDIS_RUN
	xdlMaxEqlimit  = 1024 // XDL_MAX_EQLIMIT
	xdlSimscanWin  = 100  // XDL_SIMSCAN_WINDOW
	xdlLineMax     = math.MaxInt
)

// xdfile is one side of a two-way diff (xdfile_t).
type xdfile struct {
	recs [][]byte // lines, each with its '\n' (the last one may lack it)
	cls  []int    // equivalence class of each record (rec->ha after classification)
	// rchg marks changed records; it has a zero sentinel on both ends so
	// that rchg[i+1] describes record i, as C's rchg = buf + 1.
	rchg   []byte
	rindex []int // reduced index -> record index
	ha     []int // reduced index -> class
	nreff  int
	dstart int
	dend   int
}

func (x *xdfile) nrec() int { return len(x.recs) }

func (x *xdfile) chg(i int) bool {
	if i < -1 {
		return false
	}
	return x.rchg[i+1] != 0
}

func (x *xdfile) setChg(i int, v byte) { x.rchg[i+1] = v }

type xdfenv struct {
	xdf1, xdf2 xdfile
	nclass     int // number of line classes over both files
}

// xdchange is one hunk of an edit script (xdchange_t).
type xdchange struct {
	i1, i2     int
	chg1, chg2 int
}

// splitLines cuts b into records the way xdl_hash_record walks a buffer:
// each record ends after '\n', and a trailing partial line is a record too.
func splitLines(b []byte) [][]byte {
	recs := make([][]byte, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		n := bytes.IndexByte(b, '\n') + 1
		if n == 0 {
			n = len(b)
		}
		recs = append(recs, b[:n:n])
		b = b[n:]
	}
	return recs
}

// xdlBogosqrt is git's shift-based integer square root approximation; the
// exact values matter because they set the cost limits.
func xdlBogosqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// prepareEnv is xdl_prepare_env: classify records of both files into
// equivalence classes (exact byte equality, as with flags == 0), then, for
// Myers only (optimize), trim common ends and discard records that cannot
// match. Histogram diff counts occurrences over the whole range it is
// given, so git does neither for it.
func prepareEnv(recs1, recs2 [][]byte, optimize bool) *xdfenv {
	xe := &xdfenv{}
	classes := make(map[string]int, len(recs1)+len(recs2))
	var len1, len2 []int
	classify := func(recs [][]byte, pass int) []int {
		cls := make([]int, len(recs))
		for i, r := range recs {
			c, ok := classes[string(r)]
			if !ok {
				c = len(len1)
				classes[string(r)] = c
				len1 = append(len1, 0)
				len2 = append(len2, 0)
			}
			if pass == 1 {
				len1[c]++
			} else {
				len2[c]++
			}
			cls[i] = c
		}
		return cls
	}
	initFile := func(x *xdfile, recs [][]byte, pass int) {
		x.recs = recs
		x.cls = classify(recs, pass)
		x.rchg = make([]byte, len(recs)+2)
		x.rindex = make([]int, len(recs)+1)
		x.ha = make([]int, len(recs)+1)
		x.dstart = 0
		x.dend = len(recs) - 1
	}
	initFile(&xe.xdf1, recs1, 1)
	initFile(&xe.xdf2, recs2, 2)
	xe.nclass = len(len1)

	if optimize {
		xdlTrimEnds(&xe.xdf1, &xe.xdf2)
		xdlCleanupRecords(len1, len2, &xe.xdf1, &xe.xdf2)
	}
	return xe
}

// xdlTrimEnds is xdl_trim_ends: skip the common head and tail.
func xdlTrimEnds(xdf1, xdf2 *xdfile) {
	lim := min(xdf1.nrec(), xdf2.nrec())
	i := 0
	for ; i < lim; i++ {
		if xdf1.cls[i] != xdf2.cls[i] {
			break
		}
	}
	xdf1.dstart, xdf2.dstart = i, i

	lim -= i
	r1, r2 := xdf1.nrec()-1, xdf2.nrec()-1
	for i = 0; i < lim; i, r1, r2 = i+1, r1-1, r2-1 {
		if xdf1.cls[r1] != xdf2.cls[r2] {
			break
		}
	}
	xdf1.dend = xdf1.nrec() - i - 1
	xdf2.dend = xdf2.nrec() - i - 1
}

// xdlCleanMmatch is xdl_clean_mmatch: a multi-match record is discarded
// only when it sits in a run dominated by records without any match.
func xdlCleanMmatch(dis []byte, i, s, e int) bool {
	if i-s > xdlSimscanWin {
		s = i - xdlSimscanWin
	}
	if e-i > xdlSimscanWin {
		e = i + xdlSimscanWin
	}
	rdis0, rpdis0 := 0, 1
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == 0 {
			rdis0++
		} else if dis[i-r] == 2 {
			rpdis0++
		} else {
			break
		}
	}
	if rdis0 == 0 {
		return false
	}
	rdis1, rpdis1 := 0, 1
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == 0 {
			rdis1++
		} else if dis[i+r] == 2 {
			rpdis1++
		} else {
			break
		}
	}
	if rdis1 == 0 {
		return false
	}
	rdis1 += rdis0
	rpdis1 += rpdis0
	return rpdis1*xdlKpdisRun < rpdis1+rdis1
}

// xdlCleanupRecords is xdl_cleanup_records: records with no counterpart in
// the other file are marked changed up front and kept out of the Myers
// search, as are multi-match records inside such runs.
func xdlCleanupRecords(len1, len2 []int, xdf1, xdf2 *xdfile) {
	dis1 := make([]byte, xdf1.nrec()+1)
	dis2 := make([]byte, xdf2.nrec()+1)

	mark := func(x *xdfile, dis []byte, other []int) {
		mlim := min(xdlBogosqrt(x.nrec()), xdlMaxEqlimit)
		for i := x.dstart; i <= x.dend; i++ {
			nm := other[x.cls[i]]
			switch {
			case nm == 0:
				dis[i] = 0
			case nm >= mlim:
				dis[i] = 2
			default:
				dis[i] = 1
			}
		}
	}
	mark(xdf1, dis1, len2)
	mark(xdf2, dis2, len1)

	reduce := func(x *xdfile, dis []byte) {
		nreff := 0
		for i := x.dstart; i <= x.dend; i++ {
			if dis[i] == 1 || (dis[i] == 2 && !xdlCleanMmatch(dis, i, x.dstart, x.dend)) {
				x.rindex[nreff] = i
				x.ha[nreff] = x.cls[i]
				nreff++
			} else {
				x.setChg(i, 1)
			}
		}
		x.nreff = nreff
	}
	reduce(xdf1, dis1)
	reduce(xdf2, dis2)
}

type xdpsplit struct {
	i1, i2       int
	minLo, minHi bool
}

type xdalgoenv struct {
	mxcost   int
	snakeCnt int
	heurMin  int
}

// kvec is a K vector indexed by diagonal, which may be negative.
type kvec struct {
	v   []int
	off int
}

func (k kvec) at(d int) int     { return k.v[k.off+d] }
func (k kvec) set(d int, x int) { k.v[k.off+d] = x }

// xdlSplit is xdl_split: find the middle snake of the box, or, when the
// search gets expensive and need_min is off, a good-enough split point.
func xdlSplit(ha1 []int, off1, lim1 int, ha2 []int, off2, lim2 int,
	kvdf, kvdb kvec, needMin bool, spl *xdpsplit, xenv *xdalgoenv) {
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid

	kvdf.set(fmid, off1)
	kvdb.set(bmid, lim1)

	for ec := 1; ; ec++ {
		gotSnake := false

		if fmin > dmin {
			fmin--
			kvdf.set(fmin-1, -1)
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			kvdf.set(fmax+1, -1)
		} else {
			fmax--
		}

		for d := fmax; d >= fmin; d -= 2 {
			var i1 int
			if kvdf.at(d-1) >= kvdf.at(d+1) {
				i1 = kvdf.at(d-1) + 1
			} else {
				i1 = kvdf.at(d + 1)
			}
			prev1 := i1
			i2 := i1 - d
			for i1 < lim1 && i2 < lim2 && ha1[i1] == ha2[i2] {
				i1++
				i2++
			}
			if i1-prev1 > xenv.snakeCnt {
				gotSnake = true
			}
			kvdf.set(d, i1)
			if odd && bmin <= d && d <= bmax && kvdb.at(d) <= i1 {
				spl.i1, spl.i2 = i1, i2
				spl.minLo, spl.minHi = true, true
				return
			}
		}

		if bmin > dmin {
			bmin--
			kvdb.set(bmin-1, xdlLineMax)
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			kvdb.set(bmax+1, xdlLineMax)
		} else {
			bmax--
		}

		for d := bmax; d >= bmin; d -= 2 {
			var i1 int
			if kvdb.at(d-1) < kvdb.at(d+1) {
				i1 = kvdb.at(d - 1)
			} else {
				i1 = kvdb.at(d+1) - 1
			}
			prev1 := i1
			i2 := i1 - d
			for i1 > off1 && i2 > off2 && ha1[i1-1] == ha2[i2-1] {
				i1--
				i2--
			}
			if prev1-i1 > xenv.snakeCnt {
				gotSnake = true
			}
			kvdb.set(d, i1)
			if !odd && fmin <= d && d <= fmax && i1 <= kvdf.at(d) {
				spl.i1, spl.i2 = i1, i2
				spl.minLo, spl.minHi = true, true
				return
			}
		}

		if needMin {
			continue
		}

		// Past the heuristic trigger, with a long snake seen, take a
		// diagonal that got far enough from its corner (xdiffi.c's
		// "interesting path" sampling).
		if gotSnake && ec > xenv.heurMin {
			best := 0
			for d := fmax; d >= fmin; d -= 2 {
				dd := d - fmid
				if d <= fmid {
					dd = fmid - d
				}
				i1 := kvdf.at(d)
				i2 := i1 - d
				v := (i1 - off1) + (i2 - off2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1+xenv.snakeCnt <= i1 && i1 < lim1 &&
					off2+xenv.snakeCnt <= i2 && i2 < lim2 {
					for k := 1; ha1[i1-k] == ha2[i2-k]; k++ {
						if k == xenv.snakeCnt {
							best = v
							spl.i1, spl.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				spl.minLo, spl.minHi = true, false
				return
			}

			best = 0
			for d := bmax; d >= bmin; d -= 2 {
				dd := d - bmid
				if d <= bmid {
					dd = bmid - d
				}
				i1 := kvdb.at(d)
				i2 := i1 - d
				v := (lim1 - i1) + (lim2 - i2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1 < i1 && i1 <= lim1-xenv.snakeCnt &&
					off2 < i2 && i2 <= lim2-xenv.snakeCnt {
					for k := 0; ha1[i1+k] == ha2[i2+k]; k++ {
						if k == xenv.snakeCnt-1 {
							best = v
							spl.i1, spl.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				spl.minLo, spl.minHi = false, true
				return
			}
		}

		// Too expensive: settle for the furthest reaching path.
		if ec >= xenv.mxcost {
			fbest, fbest1 := -1, -1
			for d := fmax; d >= fmin; d -= 2 {
				i1 := min(kvdf.at(d), lim1)
				i2 := i1 - d
				if lim2 < i2 {
					i1, i2 = lim2+d, lim2
				}
				if fbest < i1+i2 {
					fbest = i1 + i2
					fbest1 = i1
				}
			}
			bbest, bbest1 := xdlLineMax, xdlLineMax
			for d := bmax; d >= bmin; d -= 2 {
				i1 := max(off1, kvdb.at(d))
				i2 := i1 - d
				if i2 < off2 {
					i1, i2 = off2+d, off2
				}
				if i1+i2 < bbest {
					bbest = i1 + i2
					bbest1 = i1
				}
			}
			if (lim1+lim2)-bbest < fbest-(off1+off2) {
				spl.i1, spl.i2 = fbest1, fbest-fbest1
				spl.minLo, spl.minHi = true, false
			} else {
				spl.i1, spl.i2 = bbest1, bbest-bbest1
				spl.minLo, spl.minHi = false, true
			}
			return
		}
	}
}

// xdlRecsCmp is xdl_recs_cmp: divide and conquer over the reduced records,
// marking changed records in rchg.
func xdlRecsCmp(x1 *xdfile, off1, lim1 int, x2 *xdfile, off2, lim2 int,
	kvdf, kvdb kvec, needMin bool, xenv *xdalgoenv) {
	ha1, ha2 := x1.ha, x2.ha
	for off1 < lim1 && off2 < lim2 && ha1[off1] == ha2[off2] {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && ha1[lim1-1] == ha2[lim2-1] {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			x2.setChg(x2.rindex[off2], 1)
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			x1.setChg(x1.rindex[off1], 1)
		}
	default:
		var spl xdpsplit
		xdlSplit(ha1, off1, lim1, ha2, off2, lim2, kvdf, kvdb, needMin, &spl, xenv)
		xdlRecsCmp(x1, off1, spl.i1, x2, off2, spl.i2, kvdf, kvdb, spl.minLo, xenv)
		xdlRecsCmp(x1, spl.i1, lim1, x2, spl.i2, lim2, kvdf, kvdb, spl.minHi, xenv)
	}
}

// doDiff is xdl_do_diff for the Myers algorithm with need_min off.
func doDiff(recs1, recs2 [][]byte) *xdfenv {
	xe := prepareEnv(recs1, recs2, true)
	ndiags := xe.xdf1.nreff + xe.xdf2.nreff + 3
	kvdf := kvec{v: make([]int, ndiags), off: xe.xdf2.nreff + 1}
	kvdb := kvec{v: make([]int, ndiags), off: xe.xdf2.nreff + 1}
	xenv := xdalgoenv{
		mxcost:   max(xdlBogosqrt(ndiags), xdlMaxCostMin),
		snakeCnt: xdlSnakeCnt,
		heurMin:  xdlHeurMinCost,
	}
	xdlRecsCmp(&xe.xdf1, 0, xe.xdf1.nreff, &xe.xdf2, 0, xe.xdf2.nreff, kvdf, kvdb, false, &xenv)
	return xe
}

// xdlgroup is a run of changed records [start, end) (struct xdlgroup).
type xdlgroup struct{ start, end int }

func groupInit(x *xdfile, g *xdlgroup) {
	g.start, g.end = 0, 0
	for x.chg(g.end) {
		g.end++
	}
}

func groupNext(x *xdfile, g *xdlgroup) bool {
	if g.end == x.nrec() {
		return false
	}
	g.start = g.end + 1
	for g.end = g.start; x.chg(g.end); g.end++ {
	}
	return true
}

func groupPrevious(x *xdfile, g *xdlgroup) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	for g.start = g.end; x.chg(g.start - 1); g.start-- {
	}
	return true
}

func groupSlideDown(x *xdfile, g *xdlgroup) bool {
	if g.end < x.nrec() && x.cls[g.start] == x.cls[g.end] {
		x.setChg(g.start, 0)
		g.start++
		x.setChg(g.end, 1)
		g.end++
		for x.chg(g.end) {
			g.end++
		}
		return true
	}
	return false
}

func groupSlideUp(x *xdfile, g *xdlgroup) bool {
	if g.start > 0 && x.cls[g.start-1] == x.cls[g.end-1] {
		g.start--
		x.setChg(g.start, 1)
		g.end--
		x.setChg(g.end, 0)
		for x.chg(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// changeCompact is xdl_change_compact without the indent heuristic (git
// merge-file passes no diff flags): slide each group of changes as far down
// as it goes, merging with neighbours, then back up to line up with a
// change in the other file if possible.
func changeCompact(xdf, xdfo *xdfile) {
	var g, gother xdlgroup
	groupInit(xdf, &g)
	groupInit(xdfo, &gother)
	for {
		if g.end != g.start {
			var groupsize, earliestEnd int
			endMatchingOther := -1
			for {
				groupsize = g.end - g.start
				endMatchingOther = -1
				for groupSlideUp(xdf, &g) {
					if !groupPrevious(xdfo, &gother) {
						panic("merge3: group sync broken sliding up")
					}
				}
				earliestEnd = g.end
				if gother.end > gother.start {
					endMatchingOther = g.end
				}
				for groupSlideDown(xdf, &g) {
					if !groupNext(xdfo, &gother) {
						panic("merge3: group sync broken sliding down")
					}
					if gother.end > gother.start {
						endMatchingOther = g.end
					}
				}
				if groupsize == g.end-g.start {
					break
				}
			}
			if g.end != earliestEnd && endMatchingOther != -1 {
				for gother.end == gother.start {
					if !groupSlideUp(xdf, &g) {
						panic("merge3: match disappeared")
					}
					if !groupPrevious(xdfo, &gother) {
						panic("merge3: group sync broken sliding to match")
					}
				}
			}
		}
		if !groupNext(xdf, &g) {
			break
		}
		if !groupNext(xdfo, &gother) {
			panic("merge3: group sync broken moving to next group")
		}
	}
	if groupNext(xdfo, &gother) {
		panic("merge3: group sync broken at end of file")
	}
}

// buildScript is xdl_build_script: collect the change groups, in order.
func buildScript(xe *xdfenv) []xdchange {
	var rev []xdchange
	x1, x2 := &xe.xdf1, &xe.xdf2
	for i1, i2 := x1.nrec(), x2.nrec(); i1 >= 0 || i2 >= 0; i1, i2 = i1-1, i2-1 {
		if x1.chg(i1-1) || x2.chg(i2-1) {
			l1 := i1
			for x1.chg(i1 - 1) {
				i1--
			}
			l2 := i2
			for x2.chg(i2 - 1) {
				i2--
			}
			rev = append(rev, xdchange{i1: i1, i2: i2, chg1: l1 - i1, chg2: l2 - i2})
		}
	}
	script := make([]xdchange, len(rev))
	for i, c := range rev {
		script[len(rev)-1-i] = c
	}
	return script
}

// diffScript runs the whole two-way diff pipeline as xdl_merge does:
// xdl_do_diff, xdl_change_compact in both directions, xdl_build_script.
func diffScript(recs1, recs2 [][]byte, alg Algorithm) (*xdfenv, []xdchange) {
	var xe *xdfenv
	if alg == AlgorithmHistogram {
		xe = doHistogramDiff(recs1, recs2)
	} else {
		xe = doDiff(recs1, recs2)
	}
	changeCompact(&xe.xdf1, &xe.xdf2)
	changeCompact(&xe.xdf2, &xe.xdf1)
	return xe, buildScript(xe)
}
