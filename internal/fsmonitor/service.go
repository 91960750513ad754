package fsmonitor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Service answers the hooks of a server's exports on loopback, each
// export's journal by name, so that the hook asks the server itself and
// never reads through the mount, where the client's attribute and data
// caches (nocto, actimeo=3600) could hide a change.
//
// A query is three lines: the journal's name, the protocol version and
// the token; the reply is Journal.Answer's bytes, or nothing (the
// connection closed) for an unknown name or version, which the hook turns
// into a failure, and git into a full check.
type Service struct {
	l net.Listener

	mu       sync.Mutex
	journals map[string]*Journal
}

// Listen starts a service on a free loopback port.
func Listen() (*Service, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fsmonitor: %w", err)
	}
	s := &Service{l: l, journals: map[string]*Journal{}}
	go s.serve()
	return s, nil
}

// Addr is where the hook finds the service.
func (s *Service) Addr() string { return s.l.Addr().String() }

// Add serves j under name.
func (s *Service) Add(name string, j *Journal) {
	s.mu.Lock()
	s.journals[name] = j
	s.mu.Unlock()
}

// Close stops the service.
func (s *Service) Close() error { return s.l.Close() }

func (s *Service) serve() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		go s.answer(c)
	}
}

func (s *Service) answer(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(io.LimitReader(c, 4096))
	var q [3]string
	for i := range q {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		q[i] = strings.TrimSuffix(line, "\n")
	}
	s.mu.Lock()
	j := s.journals[q[0]]
	s.mu.Unlock()
	if j != nil {
		_, _ = j.Answer(c, q[1], q[2])
	}
}

// Query asks the service at addr for the journal name's answer to a hook
// query (version, token), and copies it to w. An empty answer is an error:
// the hook must then fail, so that git checks everything.
func Query(addr, name, version, token string, w io.Writer) error {
	if strings.ContainsAny(name+version+token, "\n") {
		return errors.New("fsmonitor: a newline in the query")
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("fsmonitor: the gitnfs server: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, name+"\n"+version+"\n"+token+"\n"); err != nil {
		return fmt.Errorf("fsmonitor: %w", err)
	}
	n, err := io.Copy(w, c)
	if err != nil {
		return fmt.Errorf("fsmonitor: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("fsmonitor: the gitnfs server at %s does not serve %q (version %s)", addr, name, version)
	}
	return nil
}
