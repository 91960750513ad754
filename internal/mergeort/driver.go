package mergeort

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitattr"
)

// The external merge drivers: merge=NAME with merge.NAME.driver in the
// config (internal/gitattr finds which), run as git 2.39's ll_ext_merge
// runs them, under /bin/sh in a private temporary directory, the whole
// process group killed after Options.DriverTimeout.

// maxDriverResult bounds what a merge driver may leave in %A: what git
// would still merge as text.
const maxDriverResult = maxXdiffSize

// mergeByAttr merges c's three versions under a (a binary or external
// driver; the text and union merges are merge3's, in compute).
func (f *Result) mergeByAttr(c *File, path string, a gitattr.Merge) (*mat, error) {
	if a.Kind == gitattr.Binary {
		size, err := f.store.BlobSize(c.ours)
		if err != nil {
			return nil, err
		}
		return &mat{outcome: outcome{size: size, conflicts: 1, binary: true}, blob: c.ours}, nil
	}
	data, conflicted, err := f.runDriver(c, path, a)
	if err != nil {
		return nil, err
	}
	f.store.Stats().ContentMerges.Add(1)
	o := outcome{size: int64(len(data))}
	if conflicted {
		o.conflicts = 1
	}
	f.store.Stats().MergedBytes.Add(int64(len(data)))
	return &mat{outcome: o, data: data}, nil
}

// runDriver is ll_ext_merge: the three versions in temporary files, the
// command line expanded and run by /bin/sh, %A read back.
func (f *Result) runDriver(c *File, path string, a gitattr.Merge) (data []byte, conflicted bool, err error) {
	d := a.Driver
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: merge driver %q (merge.%s.driver): %s", path, d.Name, d.Name, fmt.Sprintf(format, args...))
	}
	if !d.HasCmd {
		return nil, false, fail("no command line configured")
	}
	dir, err := os.MkdirTemp("", "gitnfs-merge-driver-")
	if err != nil {
		return nil, false, fail("%v", err)
	}
	defer os.RemoveAll(dir)
	var names [3]string
	for i, h := range [3]plumbing.Hash{c.base, c.ours, c.theirs} {
		if names[i], err = f.tempBlob(dir, h); err != nil {
			return nil, false, fail("%v", err)
		}
	}
	output, err := os.CreateTemp(dir, ".gitnfs-driver-output-")
	if err != nil {
		return nil, false, fail("%v", err)
	}
	defer output.Close()

	// %L is ll_merge's marker size: the attribute's, plus merge-ort's
	// extra length for a merge whose result is merged again.
	cmdline := expandDriver(d.Cmdline, names, a.MarkerSize()+c.extraMarker, path)
	ctx, cancel := context.WithTimeout(context.Background(), f.driverTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, false, fail("killed after %v", f.driverTimeout)
	}
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		conflicted = true // any non-zero status, or a signal, as in git
	default:
		return nil, false, fail("cannot run %q: %v", cmdline, runErr)
	}
	res, err := os.Open(filepath.Join(dir, names[1]))
	if err != nil {
		return nil, false, fail("no result left in %%A: %v%s", err, tail(output))
	}
	defer res.Close()
	data, err = io.ReadAll(io.LimitReader(res, maxDriverResult+1))
	if err != nil {
		return nil, false, fail("reading %%A: %v", err)
	}
	if len(data) > maxDriverResult {
		return nil, false, fail("result over %d bytes", maxDriverResult)
	}
	return data, conflicted, nil
}

// tempBlob writes blob h (empty for the zero hash) to a new file in dir,
// named as git names them, and returns its name.
func (f *Result) tempBlob(dir string, h plumbing.Hash) (string, error) {
	t, err := os.CreateTemp(dir, ".merge_file_")
	if err != nil {
		return "", err
	}
	defer t.Close()
	if !h.IsZero() {
		buf := make([]byte, 64<<10)
		var off int64
		for {
			n, err := f.store.ReadBlobAt(h, buf, off)
			if _, werr := t.Write(buf[:n]); werr != nil {
				return "", werr
			}
			off += int64(n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return "", err
			}
			if n == 0 {
				return "", fmt.Errorf("blob %s: short read at %d", h, off)
			}
		}
	}
	if err := t.Close(); err != nil {
		return "", err
	}
	return filepath.Base(t.Name()), nil
}

// tail is the end of what the driver printed, for an error message.
func tail(output *os.File) string {
	fi, err := output.Stat()
	if err != nil || fi.Size() == 0 {
		return ""
	}
	off := max(fi.Size()-512, 0)
	buf := make([]byte, fi.Size()-off)
	n, _ := output.ReadAt(buf, off)
	return "; it printed: " + strings.TrimSpace(string(buf[:n]))
}

// expandDriver is strbuf_expand with ll_ext_merge's placeholders: %O %A %B
// the temporary files, %L the marker size, %P the path shell-quoted, %%
// a percent sign; any other % stays as typed.
func expandDriver(cmdline string, names [3]string, marker int, path string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(cmdline, '%')
		if i < 0 {
			b.WriteString(cmdline)
			return b.String()
		}
		b.WriteString(cmdline[:i])
		cmdline = cmdline[i+1:]
		if cmdline == "" {
			b.WriteByte('%') // a lone % at the end stays as typed
			return b.String()
		}
		switch cmdline[0] {
		case '%':
			b.WriteByte('%')
		case 'O':
			b.WriteString(names[0])
		case 'A':
			b.WriteString(names[1])
		case 'B':
			b.WriteString(names[2])
		case 'L':
			b.WriteString(strconv.Itoa(marker))
		case 'P':
			b.WriteString(shellQuote(path))
		default:
			b.WriteByte('%')
			continue
		}
		cmdline = cmdline[1:]
	}
}

// shellQuote is git's sq_quote_buf: single quotes, with ' and ! outside.
func shellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\'' || c == '!' {
			b.WriteString("'\\")
			b.WriteByte(c)
			b.WriteByte('\'')
			continue
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}
