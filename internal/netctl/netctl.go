// Package netctl is the control protocol between users and netns-dns: a
// unix stream socket on the host (SocketPath), one JSON object per line
// each way. The kernel names the caller (SO_PEERCRED); netns-dns lets a
// user act only on the namespaces they own (Policy.Owners), root on all.
//
// A connection carries requests and their replies in order; a "watch" or
// "session" request turns it into a stream of Events until it is closed.
// Nothing in a sandbox can reach the socket: it lives in a directory the
// sandbox does not see, and has no abstract name.
package netctl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// SocketPath is the control socket netns-dns listens on
// (RuntimeDirectory=netns-dns of netns-dns.service).
const SocketPath = "/run/netns-dns/control.sock"

// Scopes of an approval.
const (
	// ScopeOnce answers the held queries of the name (or, if none is
	// held, the next query within OnceWindow), and every query it covers
	// for 5 seconds after its first answer, and pins their addresses for
	// the usual time; later queries are refused again.
	ScopeOnce = "once"
	// ScopeSession lasts while a launcher session of the namespace (a
	// connection that sent OpSession) is open; it ends with the last one.
	ScopeSession = "session"
	// ScopeAlways is stored by netns-dns in its state directory and
	// survives restarts, until revoked.
	ScopeAlways = "always"
)

// OnceWindow is how long a "once" approval with no held query waits for
// the query it answers.
const OnceWindow = time.Minute

// Ops of a Request.
const (
	OpList    = "list"    // allowances of Namespace: Reply.Allowances
	OpDenials = "denials" // refusals of Namespace since Since: Reply.Denials
	OpAllow   = "allow"   // approve Name with Scope (and Ports)
	OpRevoke  = "revoke"  // remove the approvals of Name (anyone's), refuse its held queries
	OpWatch   = "watch"   // stream Events of Namespace (every owned one if empty)
	OpSession = "session" // a launcher's session of Namespace: stream Events until closed
	OpOwned   = "owned"   // the namespaces the caller may act on: Reply.Namespaces
	// OpReady asks whether netns-dns serves Namespace fully (its policy,
	// and the sockets of the table inside it); any caller may ask. An
	// Error says what is missing and how to fix it.
	OpReady = "ready"
)

// Request is one line from a client.
type Request struct {
	Op        string `json:"op"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Scope     string `json:"scope,omitempty"`
	// Ports are "tcp 443"-style port groups of an allow; empty: the
	// ports of a domain line without ports.
	Ports []string  `json:"ports,omitempty"`
	Since time.Time `json:"since,omitempty"`
	// Asks: the session can show its user a held name (a desktop
	// notification). A session that cannot does not count as someone who
	// can answer, and its namespace's queries are refused at once.
	Asks bool `json:"asks,omitempty"`
	// EndHolds: for OpDenials, the queries of Namespace held since Since
	// are refused first, and so listed (the end of a session: its
	// summary names what was still held, and the next session's does
	// not).
	EndHolds bool `json:"end_holds,omitempty"`
}

// Reply is the one line that answers a Request (the first line of a
// stream). Error set: the request was refused or failed, with a message
// that says what to do.
type Reply struct {
	Error      string      `json:"error,omitempty"`
	Allowances []Allowance `json:"allowances,omitempty"`
	Denials    []Denial    `json:"denials,omitempty"`
	Namespaces []string    `json:"namespaces,omitempty"`
	// Held: for OpAllow, how many held queries the approval answered.
	Held int `json:"held,omitempty"`
	// NotReady: for OpReady, netns-dns does not serve the namespace fully
	// (Error says why); any other Error is no answer to the question.
	NotReady bool `json:"not_ready,omitempty"`
}

// Allowance is one name pattern a namespace resolves, and why.
type Allowance struct {
	Pattern string   `json:"pattern"`
	Ports   []string `json:"ports"`
	// Source: "config FILE:LINE", "preset NAME" or "approval".
	Source string `json:"source"`
	// Scope, By and Until describe an approval.
	Scope string    `json:"scope,omitempty"`
	By    uint32    `json:"by,omitempty"`
	Until time.Time `json:"until,omitzero"`
	// Flows: the flows an approval's answers opened that are still open
	// (address, protocol, port) and when each closes; an approval that
	// ended (scope "ended") is listed while any is.
	Flows []OpenFlow `json:"flows,omitempty"`
}

// ScopeEnded is the scope net list shows for an approval that ended
// while flows its answers opened are still open.
const ScopeEnded = "ended"

// OpenFlow is one flow of the approved set.
type OpenFlow struct {
	Addr  string    `json:"addr"`
	Proto string    `json:"proto"`
	Port  uint16    `json:"port"`
	Until time.Time `json:"until"`
}

// Denial is one refused name (or dropped connection) of a namespace.
type Denial struct {
	Time      time.Time `json:"time"`
	Namespace string    `json:"namespace"`
	// Name is the refused name (as the log writes it, escaped); empty
	// for a drop.
	Name  string `json:"name,omitempty"`
	Type  string `json:"type,omitempty"` // query type: A, AAAA, TXT ...
	Count int    `json:"count"`          // how many times since Since
	// Drop: "tcp 203.0.113.7:22" for a connection the firewall dropped.
	Drop string `json:"drop,omitempty"`
	// Approvable: the user could allow Name (not under a deny line, and
	// user-approve is not no).
	Approvable bool `json:"approvable"`
}

// Event kinds.
const (
	EventHeld     = "held"     // a query is held: answer it with OpAllow before Until
	EventRefused  = "refused"  // a name was refused (not held, or its hold ran out)
	EventApproved = "approved" // an approval was made (by anyone)
	EventReleased = "released" // a hold ended (Answered says how)
)

// Event is one line of a stream after its Reply.
type Event struct {
	Kind      string    `json:"kind"`
	Time      time.Time `json:"time"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Type      string    `json:"type,omitempty"`
	Until     time.Time `json:"until,omitempty"`
	Scope     string    `json:"scope,omitempty"`
	Answered  bool      `json:"answered,omitempty"`
}

// Conn is a client's connection.
type Conn struct {
	c   net.Conn
	r   *bufio.Scanner
	enc *json.Encoder
}

// maxLine bounds one line of the protocol either way.
const maxLine = 1 << 20

// Dial connects to netns-dns at path (SocketPath).
func Dial(path string) (*Conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, fmt.Errorf("netns-dns's control socket %s: %w (is netns-dns running? sudo systemctl start netns-dns)", path, err)
	}
	return NewConn(c), nil
}

// NewConn wraps c (either end). Text is written as it is, not with
// <, > and & as \u escapes: a name the sandbox chose (a refused one,
// at most 256 bytes as netns-dns keeps it, its odd bytes escaped \DDD or
// \X) then takes at most twice its length in a line, so that the denials
// of a namespace (at most 1000) fit in maxLine however they are chosen.
func NewConn(c net.Conn) *Conn {
	s := bufio.NewScanner(c)
	s.Buffer(make([]byte, 4096), maxLine)
	enc := json.NewEncoder(c)
	enc.SetEscapeHTML(false)
	return &Conn{c: c, r: s, enc: enc}
}

// Send writes one line.
func (c *Conn) Send(v any) error { return c.enc.Encode(v) }

// Recv reads one line into v.
func (c *Conn) Recv(v any) error {
	if !c.r.Scan() {
		if err := c.r.Err(); err != nil {
			return err
		}
		return net.ErrClosed
	}
	return json.Unmarshal(c.r.Bytes(), v)
}

// Do sends req and reads its Reply; a Reply with Error is returned as an
// error.
func (c *Conn) Do(req Request) (Reply, error) {
	var rep Reply
	if err := c.Send(req); err != nil {
		// netns-dns may have refused the connection (too many open)
		// before it read anything: its reason is there to read.
		if rerr := c.Recv(&rep); rerr != nil || rep.Error == "" {
			return Reply{}, err
		}
		return rep, fmt.Errorf("netns-dns: %s", rep.Error)
	}
	if err := c.Recv(&rep); err != nil {
		return rep, err
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("netns-dns: %s", rep.Error)
	}
	return rep, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Raw is the underlying connection (a server reads SO_PEERCRED from it).
func (c *Conn) Raw() net.Conn { return c.c }
