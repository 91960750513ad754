package merge3

import "slices"

// This file ports xdiff/xhistogram.c (git 2.36+, where histogram records
// are classified like Myers ones), the diff algorithm of git's merge-ort:
// `git merge-tree` and `git merge` use it for content merges, so it decides
// which paths they report as conflicted. Line numbers are 1-based, as in C.

// histMaxChainLength is max_chain_length: lines occurring more often than
// this in the range are not used as LCS anchors.
const histMaxChainLength = 64

type histRecord struct {
	ptr int // the first occurrence of the line in the range
	cnt int // occurrences in the range
}

type histIndex struct {
	env *xdfenv
	// records is indexed by class (C: a hash table keyed on it). It is
	// allocated once per diff and cleared after each find_lcs, since the
	// recursion indexes many small ranges.
	records  []*histRecord
	pool     []histRecord
	lineMap  []*histRecord // by line - ptrShift
	nextPtrs []int         // next occurrence, by line - ptrShift; 0 ends
	ptrShift int
	cnt      int
	// hasCommon: some line is common to both ranges, even if too
	// frequent to anchor on.
	hasCommon bool
}

type histRegion struct {
	begin1, end1 int
	begin2, end2 int
}

func (ix *histIndex) cmp(l1, l2 int) bool {
	return ix.env.xdf1.cls[l1-1] == ix.env.xdf2.cls[l2-1]
}

func (ix *histIndex) nextPtr(ptr int) int { return ix.nextPtrs[ptr-ix.ptrShift] }

func (ix *histIndex) cntAt(ptr int) int { return ix.lineMap[ptr-ix.ptrShift].cnt }

// scanA indexes the lines of the first range, back to front, so each
// record's ptr ends up at the first occurrence with nextPtrs chaining on.
//
// git also fails the whole diff when 64 distinct lines share one bucket of
// its hash table; with the table at least as large as the range and
// classes numbered densely this does not happen in practice, and the port
// does not model the table.
func (ix *histIndex) scanA(line1, count1 int) {
	for ptr := line1 + count1 - 1; line1 <= ptr; ptr-- {
		c := ix.env.xdf1.cls[ptr-1]
		if rec := ix.records[c]; rec != nil {
			ix.nextPtrs[ptr-ix.ptrShift] = rec.ptr
			rec.ptr = ptr
			rec.cnt++
			ix.lineMap[ptr-ix.ptrShift] = rec
			continue
		}
		ix.pool = append(ix.pool, histRecord{ptr: ptr, cnt: 1})
		rec := &ix.pool[len(ix.pool)-1]
		ix.records[c] = rec
		ix.lineMap[ptr-ix.ptrShift] = rec
	}
}

// tryLCS is try_lcs: extend every occurrence in A of line bPtr of B into a
// common run and keep the run whose rarest line is rarest (then longest).
func (ix *histIndex) tryLCS(lcs *histRegion, bPtr, line1, count1, line2, count2 int) int {
	bNext := bPtr + 1
	rec := ix.records[ix.env.xdf2.cls[bPtr-1]]
	if rec == nil {
		return bNext
	}
	if rec.cnt > ix.cnt {
		// Same class as bPtr, so the C CMP() here is true.
		ix.hasCommon = true
		return bNext
	}
	end1, end2 := line1+count1-1, line2+count2-1
	as := rec.ptr
	ix.hasCommon = true
	for {
		np := ix.nextPtr(as)
		bs := bPtr
		ae, be := as, bs
		rc := rec.cnt
		for line1 < as && line2 < bs && ix.cmp(as-1, bs-1) {
			as--
			bs--
			if 1 < rc {
				rc = min(rc, ix.cntAt(as))
			}
		}
		for ae < end1 && be < end2 && ix.cmp(ae+1, be+1) {
			ae++
			be++
			if 1 < rc {
				rc = min(rc, ix.cntAt(ae))
			}
		}
		if bNext <= be {
			bNext = be + 1
		}
		if lcs.end1-lcs.begin1 < ae-as || rc < ix.cnt {
			*lcs = histRegion{begin1: as, end1: ae, begin2: bs, end2: be}
			ix.cnt = rc
		}
		if np == 0 {
			break
		}
		for np <= ae {
			np = ix.nextPtr(np)
			if np == 0 {
				return bNext
			}
		}
		as = np
	}
	return bNext
}

// findLCS is find_lcs: 1 means fall back to Myers (there are common lines,
// but all too frequent), 0 means lcs is set (or there is nothing common).
func (ix *histIndex) findLCS(lcs *histRegion, line1, count1, line2, count2 int) int {
	// The pool must not grow while records point into it.
	ix.pool = slices.Grow(ix.pool[:0], count1)
	ix.lineMap = slices.Grow(ix.lineMap[:0], count1)[:count1]
	ix.nextPtrs = slices.Grow(ix.nextPtrs[:0], count1)[:count1]
	clear(ix.nextPtrs)
	ix.ptrShift = line1
	ix.hasCommon = false
	ix.scanA(line1, count1)
	ix.cnt = histMaxChainLength + 1
	for bPtr := line2; bPtr <= line2+count2-1; {
		bPtr = ix.tryLCS(lcs, bPtr, line1, count1, line2, count2)
	}
	for ptr := line1; ptr < line1+count1; ptr++ {
		ix.records[ix.env.xdf1.cls[ptr-1]] = nil
	}
	if ix.hasCommon && histMaxChainLength < ix.cnt {
		return 1
	}
	return 0
}

// fallBackDiff is xdl_fall_back_diff: a fresh Myers diff of the two ranges
// (with its own end trimming and discarding), copied back.
func fallBackDiff(env *xdfenv, line1, count1, line2, count2 int) {
	sub := doDiff(env.xdf1.recs[line1-1:line1-1+count1], env.xdf2.recs[line2-1:line2-1+count2])
	copy(env.xdf1.rchg[line1:line1+count1], sub.xdf1.rchg[1:1+count1])
	copy(env.xdf2.rchg[line2:line2+count2], sub.xdf2.rchg[1:1+count2])
}

// histogramDiff is histogram_diff: split at the LCS of rarest lines and
// recurse on both sides of it (the right side as a loop, as in C).
func (ix *histIndex) histogramDiff(line1, count1, line2, count2 int) {
	env := ix.env
	for {
		if count1 <= 0 && count2 <= 0 {
			return
		}
		if count1 == 0 {
			for ; count2 > 0; count2, line2 = count2-1, line2+1 {
				env.xdf2.setChg(line2-1, 1)
			}
			return
		}
		if count2 == 0 {
			for ; count1 > 0; count1, line1 = count1-1, line1+1 {
				env.xdf1.setChg(line1-1, 1)
			}
			return
		}
		var lcs histRegion
		if ix.findLCS(&lcs, line1, count1, line2, count2) == 1 {
			fallBackDiff(env, line1, count1, line2, count2)
			return
		}
		if lcs.begin1 == 0 && lcs.begin2 == 0 {
			for ; count1 > 0; count1, line1 = count1-1, line1+1 {
				env.xdf1.setChg(line1-1, 1)
			}
			for ; count2 > 0; count2, line2 = count2-1, line2+1 {
				env.xdf2.setChg(line2-1, 1)
			}
			return
		}
		ix.histogramDiff(line1, lcs.begin1-line1, line2, lcs.begin2-line2)
		end1, end2 := line1+count1-1, line2+count2-1
		count1, line1 = end1-lcs.end1, lcs.end1+1
		count2, line2 = end2-lcs.end2, lcs.end2+1
	}
}

// doHistogramDiff is xdl_do_histogram_diff.
func doHistogramDiff(recs1, recs2 [][]byte) *xdfenv {
	xe := prepareEnv(recs1, recs2, false)
	ix := &histIndex{env: xe, records: make([]*histRecord, xe.nclass)}
	ix.histogramDiff(1, len(recs1), 1, len(recs2))
	return xe
}
