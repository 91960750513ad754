package promisor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// object-info (gitprotocol-v2(5), git's protocol-caps.c): the client sends
//
//	command=object-info
//	[agent=..., object-format=sha1: only if the server advertised them]
//	0001
//	size
//	oid <hex>   (one per object)
//	0000
//
// and upload-pack answers "size", then one "<hex> <size>" per id in the
// order asked, "<hex> " (an empty size) for an object it does not have,
// then a flush. git 2.39 serves it when transfer.advertiseObjectInfo is
// true, and refuses a command it did not advertise.

// maxInfoIDs bounds the ids of one request: upload-pack reads them all
// into memory, and a smart HTTP POST carries them in one body (45 bytes an
// id: 740 KB). A bigger directory takes several round trips.
const maxInfoIDs = 16384

// errNoObjectInfo is a remote that does not serve object-info.
var errNoObjectInfo = errors.New("the remote does not serve object-info")

// infoClient asks one remote for sizes.
type infoClient struct {
	remote Remote
	ep     endpoint
	epErr  error // the transport cannot be spoken (errTransport)

	mu        sync.Mutex
	known     bool   // whether the remote offers object-info is known
	supported bool   // ... and it does
	why       string // ... and, when it does not, what it said
}

func newInfoClient(r Remote, e env) *infoClient {
	ep, err := newEndpoint(r, e)
	return &infoClient{remote: r, ep: ep, epErr: err}
}

// support reports what is known of the remote's object-info: known is
// false until a session has been opened.
func (c *infoClient) support() (known, supported bool, why string) {
	if c.epErr != nil {
		return true, false, c.epErr.Error()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known, c.supported, c.why
}

func (c *infoClient) learn(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known = true
	c.supported = s.has("object-info")
	switch {
	case c.supported:
		c.why = ""
	case s.caps == nil:
		c.why = "the server answered protocol v0 (no commands)"
	default:
		c.why = "the server does not advertise object-info (git upload-pack does with transfer.advertiseObjectInfo=true)"
	}
}

// probe opens a session to learn whether the remote serves object-info.
func (c *infoClient) probe(ctx context.Context) error {
	if c.epErr != nil {
		return c.epErr
	}
	s, err := c.ep.open(ctx)
	if err != nil {
		return err
	}
	c.learn(s)
	return s.close()
}

// sizes asks the remote for the size of each id. Ids the remote does not
// have are absent from the map. errNoObjectInfo (wrapped) when it does not
// serve the command. One round trip per maxInfoIDs ids.
func (c *infoClient) sizes(ctx context.Context, ids []plumbing.Hash) (map[plumbing.Hash]int64, error) {
	if c.epErr != nil {
		return nil, fmt.Errorf("%w: %v", errNoObjectInfo, c.epErr)
	}
	out := make(map[plumbing.Hash]int64, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), maxInfoIDs)
		if err := c.sizesOnce(ctx, ids[:n], out); err != nil {
			return out, err
		}
		ids = ids[n:]
	}
	return out, nil
}

func (c *infoClient) sizesOnce(ctx context.Context, ids []plumbing.Hash, out map[plumbing.Hash]int64) (err error) {
	s, err := c.ep.open(ctx)
	if err != nil {
		return err
	}
	// How upload-pack exits after its answer changes nothing of the answer.
	defer s.close()
	c.learn(s)
	if !s.has("object-info") {
		_, _, why := c.support()
		return fmt.Errorf("%w: %s", errNoObjectInfo, why)
	}
	req := appendPkt(nil, "command=object-info\n")
	if s.has("agent") {
		req = appendPkt(req, "agent=gitnfs\n")
	}
	if s.has("object-format") {
		req = appendPkt(req, "object-format=sha1\n")
	}
	req = append(req, pktDelim...)
	req = appendPkt(req, "size\n")
	for _, id := range ids {
		req = appendPkt(req, "oid "+id.String()+"\n")
	}
	req = append(req, pktFlush...)
	p, err := s.send(req)
	if err != nil {
		return err
	}
	lines, err := p.readLines()
	if err != nil {
		return fmt.Errorf("object-info: %w", err)
	}
	return parseSizes(lines, ids, out)
}

// parseSizes reads an object-info answer: the attribute line "size", then
// "<hex> <size>" per id asked, in order; "<hex> " is an object the remote
// does not have.
func parseSizes(lines []string, ids []plumbing.Hash, out map[plumbing.Hash]int64) error {
	if len(ids) == 0 {
		return nil
	}
	if len(lines) == 0 || lines[0] != "size" {
		return fmt.Errorf("object-info: protocol error: the answer does not start with \"size\" (%d lines)", len(lines))
	}
	lines = lines[1:]
	if len(lines) != len(ids) {
		return fmt.Errorf("object-info: protocol error: %d answers for %d ids", len(lines), len(ids))
	}
	for i, line := range lines {
		hexID, size, ok := strings.Cut(line, " ")
		if !ok || hexID != ids[i].String() {
			return fmt.Errorf("object-info: protocol error: answer %q for id %s", line, ids[i])
		}
		if size == "" {
			continue // the remote does not have it
		}
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("object-info: protocol error: size %q of %s", size, ids[i])
		}
		out[ids[i]] = n
	}
	return nil
}
