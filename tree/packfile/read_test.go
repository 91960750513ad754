package packfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// catFile returns every object's content as git cat-file --batch gives it.
func catFile(t *testing.T, dir string, objs []object) map[plumbing.Hash][]byte {
	t.Helper()
	var in strings.Builder
	for _, o := range objs {
		fmt.Fprintln(&in, o.id)
	}
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	got := map[plumbing.Hash][]byte{}
	for _, o := range objs {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, o.size+1) // the content and its newline
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		got[o.id] = data[:o.size]
	}
	return got
}

// readAll opens id and reads it whole, checking what Open announced.
func readAll(t *testing.T, p *Packs, id plumbing.Hash, bases *Bases) ([]byte, plumbing.ObjectType) {
	r, ok, err := p.Open(id, bases)
	if err != nil || !ok {
		t.Fatalf("Open(%s) = ok %v, %v", id, ok, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	if int64(len(data)) != r.Size {
		t.Fatalf("read %s: %d bytes, Open said %d", id, len(data), r.Size)
	}
	return data, r.Type
}

func TestOpenReadsWhatGitCatFileReads(t *testing.T) {
	inBothDeltaStyles(t, small.build(t), func(t *testing.T, dir string) {
		p := openPacks(t, dir)
		if c := takeCensus(t, p); c.ofsDeltas+c.refDeltas < 100 || c.bigBases < 3 {
			t.Fatalf("the pack has too few deltas or big blobs to test reading: %+v", c)
		}
		objs := gitObjects(t, dir)
		want := catFile(t, dir, objs)
		// Twice: once filling the base cache, once served from it.
		bases := NewBases(1 << 20)
		for round := 0; round < 2; round++ {
			for _, o := range objs {
				data, kind := readAll(t, p, o.id, bases)
				if kind.String() != o.kind || !bytes.Equal(data, want[o.id]) {
					t.Fatalf("round %d: %s: read a %s of %d bytes, git has a %s of %d", round, o.id, kind, len(data), o.kind, o.size)
				}
			}
		}
		if used := bases.Used(); used == 0 || used > 1<<20 {
			t.Errorf("base cache holds %d bytes, want some and at most its bound of %d", used, 1<<20)
		}
	})
}

func TestConcurrentOpensAgreeWithGit(t *testing.T) {
	src := small.build(t)
	dir := packObjects(t, src, "--delta-base-offset")
	p := openPacks(t, dir)
	objs := gitObjects(t, dir)
	want := catFile(t, dir, objs)
	bases := NewBases(64 << 10)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range objs {
				o := objs[(i*7+g*131)%len(objs)]
				r, ok, err := p.Open(o.id, bases)
				if err != nil || !ok {
					errs <- fmt.Errorf("Open(%s) = %v, %v", o.id, ok, err)
					return
				}
				data, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(data, want[o.id]) {
					errs <- fmt.Errorf("%s: %d bytes, %v; git has %d", o.id, len(data), err, o.size)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestOpenOfAnAbsentObjectIsNotFound(t *testing.T) {
	p := openPacks(t, packObjects(t, small.build(t), "--delta-base-offset"))
	if r, ok, err := p.Open(plumbing.NewHash(strings.Repeat("ab", 20)), nil); ok || err != nil || r != nil {
		t.Fatalf("Open(absent) = %v, %v, %v; want not found, no error", r, ok, err)
	}
}

func TestStreamOfARemovedPackIsAnError(t *testing.T) {
	src := small.build(t)
	dir := packObjects(t, src, "--delta-base-offset")
	p := openPacks(t, dir)
	var big object
	for _, o := range gitObjects(t, dir) {
		if o.kind == "blob" && o.size >= bigFileThreshold {
			if r, ok, err := p.Open(o.id, nil); err == nil && ok && r.Resident() == 0 {
				r.Close()
				big = o
				break
			}
		}
	}
	if big.size == 0 {
		t.Fatal("no big blob stored whole (not as a delta) to stream")
	}
	r, _, err := p.Open(big.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	// A repack: the old pack goes, a new one comes.
	testrepo.Git(t, dir, "repack", "-adkfq", "--depth=3") // -k: this repository has no refs
	if _, err := p.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("reading on after the pack was removed: %v, want an error saying so", err)
	}
	data, _ := readAll(t, p, big.id, nil)
	if int64(len(data)) != big.size {
		t.Fatalf("reopened after the repack: %d bytes, want %d", len(data), big.size)
	}
}

func TestCorruptClaimedSizeIsRefusedBeforeAllocating(t *testing.T) {
	blob := []byte("hello, world\n")
	idx, pack := buildPack([]rawObject{{id: hashN(0), typ: plumbing.BlobObject, size: 1 << 50, body: blob}})
	p, err := memPacks(idx, pack)
	if err != nil {
		t.Fatal(err)
	}
	_, ok, err := p.Open(hashN(0), nil)
	if err == nil || !strings.Contains(err.Error(), "claims") {
		t.Fatalf("Open of a blob claiming 2^50 bytes = ok %v, %v; want a refusal", ok, err)
	}
}

// TestReadIntoReadsWhatGitCatFileReads: ReadInto gives every object's
// bytes as git has them, in the caller's buffer when it has room, reused
// from one object to the next, and reads a small object, stored whole or
// as a delta whose base is cached, without an allocation (a tree of a
// cold walk cost five: a Reader, its stream, the inflated bytes...; and
// compress/flate allocates a table for each 9-bit prefix of a dynamic
// block's longer codes, which a small text blob's block has).
func TestReadIntoReadsWhatGitCatFileReads(t *testing.T) {
	inBothDeltaStyles(t, small.build(t), func(t *testing.T, dir string) {
		p := openPacks(t, dir)
		objs := gitObjects(t, dir)
		want := catFile(t, dir, objs)
		bases := NewBases(4 << 20)
		buf := make([]byte, 64<<10)
		var smallBase, smallDelta plumbing.Hash
		for round := 0; round < 2; round++ {
			for _, o := range objs {
				data, typ, ok, err := p.ReadInto(o.id, buf, bases)
				if err != nil || !ok {
					t.Fatalf("ReadInto(%s) = ok %v, %v", o.id, ok, err)
				}
				if typ.String() != o.kind || !bytes.Equal(data, want[o.id]) {
					t.Fatalf("round %d: %s: read a %s of %d bytes, git has a %s of %d", round, o.id, typ, len(data), o.kind, o.size)
				}
				if inBuf := len(data) > 0 && &data[0] == &buf[0]; inBuf != (len(data) > 0 && len(data) <= len(buf)) {
					t.Fatalf("%s: %d bytes, in the caller's buffer of %d: %v", o.id, len(data), len(buf), inBuf)
				}
				if o.size > 0 && o.size < 4<<10 {
					if h := headerOf(t, p, o.id); h.typ == typeOfsDelta || h.typ == typeRefDelta {
						smallDelta = o.id
					} else {
						smallBase = o.id
					}
				}
			}
		}
		for _, id := range []plumbing.Hash{smallBase, smallDelta} {
			if id.IsZero() {
				t.Fatal("the pack has no small object stored whole or no small delta")
			}
			allocs := testing.AllocsPerRun(50, func() {
				if _, _, ok, err := p.ReadInto(id, buf, bases); err != nil || !ok {
					t.Fatal(ok, err)
				}
			})
			if allocs >= 1 {
				t.Errorf("ReadInto(%s) (%v): %.1f allocations a read, want none", id, headerOf(t, p, id).typ, allocs)
			}
		}
		if _, _, ok, err := p.ReadInto(hashN(12345), buf, bases); ok || err != nil {
			t.Errorf("ReadInto of an absent object = %v, %v; want not found", ok, err)
		}
	})
}

// headerOf is the pack header of id.
func headerOf(t *testing.T, p *Packs, id plumbing.Hash) objectHeader {
	t.Helper()
	pk, off, ok, err := find(p.packs, id)
	if !ok || err != nil {
		t.Fatalf("find(%s) = %v, %v", id, ok, err)
	}
	h, err := pk.header(off)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// inBothDeltaStyles runs f on the objects of repository src packed with
// offset deltas and again with ref deltas (git writes either).
func inBothDeltaStyles(t *testing.T, src string, f func(t *testing.T, dir string)) {
	for _, tc := range []struct {
		name string
		opts []string
	}{{"ofs-deltas", []string{"--delta-base-offset"}}, {"ref-deltas", []string{"--no-delta-base-offset"}}} {
		t.Run(tc.name, func(t *testing.T) { f(t, packObjects(t, src, tc.opts...)) })
	}
}
