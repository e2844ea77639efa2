// Package net is the net applet (claude-sandbox net): a user's view of
// netns-dns through its control socket (internal/netctl), without sudo:
// the names refused in their own namespaces, the allowances with where
// each comes from, approvals (allow, revoke) and a live list of the
// queries netns-dns holds while it asks (watch).
package net

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall/kongparse"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Applet is the net applet.
var Applet = multicall.Applet{Name: "net", Run: run}

// DefaultScope is the scope of net allow without --once, --session or
// --always: the least an approval can give.
const DefaultScope = netctl.ScopeOnce

// flags is the command line.
type flags struct {
	Help    bool       `short:"h" help:"Show this help."`
	Denials denialsCmd `cmd:"" help:"The names refused in your namespaces, each with the command that allows it."`
	Allow   allowCmd   `cmd:"" help:"Allow a name in your namespace (default: once)."`
	Revoke  revokeCmd  `cmd:"" help:"Remove your approvals of a name."`
	List    listCmd    `cmd:"" help:"What your namespace may resolve, and why."`
	Watch   watchCmd   `cmd:"" help:"A live list of held queries and refusals; one key allows or denies."`
}

type denialsCmd struct {
	Namespace string        `arg:"" optional:"" help:"Only this namespace (default: every namespace of yours)."`
	Since     time.Duration `name:"since" placeholder:"DURATION" help:"Only refusals of the last DURATION (such as 1h)."`
	JSON      bool          `name:"json" help:"Print JSON."`
}

type allowCmd struct {
	Name      string          `arg:"" help:"The name (NAME or *.NAME)."`
	Once      bool            `name:"once" xor:"scope" help:"Answer the held queries of NAME, or its next query within a minute (the default)."`
	Session   bool            `name:"session" xor:"scope" help:"Until the running sessions of the namespace end."`
	Always    bool            `name:"always" xor:"scope" help:"Until revoked, across restarts."`
	Port      kongparse.Pairs `name:"port" placeholder:"PROTO PORT" help:"Allow only this port (tcp or udp, a number or LOW-HIGH); repeatable. Default: the ports of a domain line."`
	Namespace string          `name:"namespace" placeholder:"NS" help:"The namespace (default: yours)."`
	JSON      bool            `name:"json" help:"Print JSON."`
}

type revokeCmd struct {
	Name      string `arg:"" help:"The name."`
	Namespace string `name:"namespace" placeholder:"NS" help:"The namespace (default: yours)."`
	JSON      bool   `name:"json" help:"Print JSON."`
}

type listCmd struct {
	Namespace string `name:"namespace" placeholder:"NS" help:"The namespace (default: yours)."`
	JSON      bool   `name:"json" help:"Print JSON."`
}

type watchCmd struct {
	Namespace string `name:"namespace" placeholder:"NS" help:"Only this namespace (default: every namespace of yours)."`
}

// world is what the command reaches: netns-dns's socket, who runs it, the
// environment and the clock (tests have their own).
type world struct {
	socket string
	uid    int
	getenv func(string) string
	now    func() time.Time
	// signals are the ones watch restores the terminal on (nil: none).
	signals []os.Signal
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	w := world{socket: netctl.SocketPath, uid: os.Getuid(), getenv: os.Getenv, now: time.Now,
		signals: []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}}
	return w.run(ctx, args, stdio)
}

func (w world) run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	var f flags
	cmd, err := kongparse.ParseCommand(&f, &f.Help, netctl.Command,
		"See and manage what netns-dns refuses and allows in your network namespaces, without sudo.", args, stdio)
	if errors.Is(err, kongparse.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ns := range []string{f.Denials.Namespace, f.Allow.Namespace, f.Revoke.Namespace, f.List.Namespace, f.Watch.Namespace} {
		if ns != "" {
			if err := nsname.Check(ns); err != nil {
				return multicall.Usagef("namespace: %w", err)
			}
		}
	}
	c, err := dial(w.socket)
	if err != nil {
		return err
	}
	defer c.Close()
	switch strings.Fields(cmd)[0] {
	case "denials":
		return w.denials(c, f.Denials, stdio.Out)
	case "allow":
		return w.allow(c, f.Allow, stdio.Out)
	case "revoke":
		return w.revoke(c, f.Revoke, stdio.Out)
	case "list":
		return w.list(c, f.List, stdio.Out)
	case "watch":
		return w.watch(ctx, c, f.Watch.Namespace, stdio)
	}
	return fmt.Errorf("unknown command %q", cmd)
}

// dial connects to netns-dns, or says why it cannot and what to do.
func dial(path string) (*netctl.Conn, error) {
	c, err := netctl.Dial(path)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("netns-dns's control socket %s is not there: netns-dns is not running, or is older than this command: sudo systemctl restart netns-dns", path)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("netns-dns's control socket %s: permission denied: ask your admin to restart netns-dns (sudo systemctl restart netns-dns), which makes it reachable by every user", path)
	}
	return nil, err
}

// do sends req and reads its reply; a refusal is netns-dns's message,
// quoted if it is not safe to print.
func do(c *netctl.Conn, req netctl.Request) (netctl.Reply, error) {
	rep, err := c.Do(req)
	if err != nil && rep.Error != "" {
		return rep, fmt.Errorf("netns-dns refused %s: %s", req.Op, quote.String(rep.Error))
	}
	if err != nil {
		return rep, fmt.Errorf("netns-dns's control socket: %s: %w", req.Op, err)
	}
	return rep, nil
}

// owned returns the namespaces netns-dns lets the user act on.
func owned(c *netctl.Conn) ([]string, error) {
	rep, err := do(c, netctl.Request{Op: netctl.OpOwned})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range rep.Namespaces {
		if nsname.Valid(ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// base is the namespace the launcher starts from: CLAUDE_SBX_NETNS, else
// the build's.
func (w world) base() (string, error) {
	ns := buildinfo.Netns
	if v := w.getenv("CLAUDE_SBX_NETNS"); v != "" {
		if err := nsname.Check(v); err != nil {
			return "", multicall.Usagef("CLAUDE_SBX_NETNS: %w", err)
		}
		ns = v
	}
	return ns, nil
}

// namespace returns ns, or the one the launcher would use for this user:
// NAME-UID if netns-dns says it is theirs, else NAME.
func (w world) namespace(c *netctl.Conn, ns string) (string, error) {
	if ns != "" {
		return ns, nil
	}
	base, err := w.base()
	if err != nil {
		return "", err
	}
	mine, err := owned(c)
	if err != nil {
		return "", err
	}
	return nsname.ForUser(base, w.uid, func(n string) bool { return slices.Contains(mine, n) }), nil
}

func writeJSON(out io.Writer, v any) error {
	e := json.NewEncoder(out)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// stamp is a time as the lines print it.
func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
