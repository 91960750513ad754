package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
)

// ExtraMount is one more export that the script workload mounts beside the
// workload's own mount, at /mnt/NAME, with the same options but its own
// port and, if set, its own export path (a subdirectory, a revision): one
// boot can then run a suite against several servers and mounts (a boot
// under TCG costs 5-10 s).
type ExtraMount struct {
	Name   string `json:"name"`
	Port   int    `json:"port"`
	Export string `json:"export"` // "" is the workload's own export path
}

var mountName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkMounts refuses names that would not be a directory of /mnt or a
// shell variable (the script gets MNT_NAME), or that clash.
func checkMounts(ms []ExtraMount) error {
	seen := map[string]bool{"nfs": true} // the workload's own mount
	for _, m := range ms {
		if !mountName.MatchString(m.Name) || seen[m.Name] {
			return fmt.Errorf("extra mount %q: a name must match %s and be unique (and not nfs)", m.Name, mountName)
		}
		if m.Port <= 0 || m.Port > 65535 {
			return fmt.Errorf("extra mount %q: port %d out of range", m.Name, m.Port)
		}
		if m.Export != "" && !strings.HasPrefix(m.Export, "/") {
			return fmt.Errorf("extra mount %q: export %q does not start with /", m.Name, m.Export)
		}
		seen[m.Name] = true
	}
	return nil
}

// scriptWorkload runs cfg.Script with /bin/sh (busybox) in the fresh mount:
// argument 1 is the mount's directory, MNT_NAME the directory of each extra
// mount. Every line it prints (stdout and stderr, in order) goes to the
// results as `script workload=NAME line="..."`: the host decides what
// passed. It fails when the script exits non-zero.
func scriptWorkload(cfg *Config, doc string) workload {
	return workload{doc: doc, run: func(ctx context.Context, dir string, items map[string]uint64, _ *Output) error {
		if cfg.Script == "" {
			return fmt.Errorf("the script workload needs a script (run.sh --script PATH)")
		}
		if err := checkMounts(cfg.Mounts); err != nil {
			return err
		}
		env := append([]string{}, toolEnv...)
		for _, m := range cfg.Mounts {
			target := "/mnt/" + m.Name
			os.MkdirAll(target, 0o755)
			c := *cfg
			c.Port, c.MountPort = m.Port, m.Port
			if m.Export != "" {
				c.Export = m.Export
			}
			if _, err := mountAt(&c, target); err != nil {
				return err
			}
			defer umountAt(target)
			env = append(env, "MNT_"+strings.ToUpper(m.Name)+"="+target)
		}
		cmd := exec.CommandContext(ctx, "/bin/sh", cfg.Script, dir)
		cmd.Dir = dir
		cmd.Env = env
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				items["script_lines"]++
				emitResults("script workload=script line=%s", q(sc.Text()))
			}
			io.Copy(io.Discard, pr)
			close(done)
		}()
		werr := cmd.Wait()
		pw.Close()
		<-done
		if werr != nil {
			if ee, ok := werr.(*exec.ExitError); ok && ee.ExitCode() >= 0 {
				items["exit_code"] = uint64(ee.ExitCode())
				return fmt.Errorf("%s exited %d", cfg.Script, ee.ExitCode())
			}
			return fmt.Errorf("%s: %v", cfg.Script, werr)
		}
		return nil
	}}
}

// umountAt is doUmount for another mount point.
func umountAt(target string) {
	if err := syscall.Unmount(target, 0); err != nil && err != syscall.EINVAL {
		logf("umount %s: %v; detaching", target, err)
		syscall.Unmount(target, syscall.MNT_DETACH)
	}
}
