// Command restarter holds a listening socket and restarts a server on it
// every few seconds, handing the socket over by systemd's socket-activation
// convention (LISTEN_FDS=1, fd 3). Clients never see a refused connection:
// while one server process stops and the next starts, their connections wait
// in the socket's backlog. e2e/restart.sh uses it to restart gitnfs under
// active kernel-client mounts.
//
//	restarter -listen 127.0.0.1:PORT -every 2s [-max 500] [-log FILE] -- CMD ARGS...
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("listen", "", "address to hold")
	every := flag.Duration("every", 2*time.Second, "how long each server process lives")
	max := flag.Int("max", 500, "restarts at most (bounded)")
	logFile := flag.String("log", "", "append one line per restart here")
	flag.Parse()
	if *addr == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: restarter -listen ADDR [-every D] [-max N] [-log FILE] -- CMD ARGS...")
		os.Exit(2)
	}
	if err := run(*addr, *every, *max, *logFile, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "restarter:", err)
		os.Exit(1)
	}
}

func run(addr string, every time.Duration, max int, logFile string, argv []string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	var logw *os.File
	if logFile != "" {
		if logw, err = os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer logw.Close()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	for i := 0; ; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.ExtraFiles = []*os.File{lf} // fd 3
		cmd.Env = append(os.Environ(), "LISTEN_FDS=1")
		if err := cmd.Start(); err != nil {
			return err
		}
		last := i >= max
		var timer <-chan time.Time
		if !last {
			timer = time.After(every)
		}
		select {
		case <-stop:
			cmd.Process.Signal(os.Interrupt)
			return wait(cmd)
		case <-timer:
		}
		cmd.Process.Signal(os.Interrupt)
		if err := wait(cmd); err != nil {
			return err
		}
		if logw != nil {
			fmt.Fprintf(logw, "restart %d\n", i+1)
		}
	}
}

// wait reaps the server, killing it if SIGINT did not stop it in 10 s.
func wait(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within 10 s of SIGINT", cmd.Path)
	}
}
