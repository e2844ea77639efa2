package net

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// denial is a netctl.Denial as net denials --json prints it.
type denial struct {
	netctl.Denial
	// Allow is the command that allows the name; Why, when it is empty,
	// says why none can.
	Allow string `json:"allow,omitempty"`
	Why   string `json:"why,omitempty"`
}

// denials prints the refusals of ns, or of every namespace of the user,
// oldest first, each with the command that allows it.
func (w world) denials(c *netctl.Conn, f denialsCmd, out io.Writer) error {
	spaces := []string{f.Namespace}
	if f.Namespace == "" {
		var err error
		if spaces, err = owned(c); err != nil {
			return err
		}
		if len(spaces) == 0 {
			return fmt.Errorf("netns-dns knows no namespace of yours (uid %d): ask your admin which namespace is yours", w.uid)
		}
	}
	// The advice names the namespace unless it is the command's default.
	def, err := w.namespace(c, "")
	if err != nil {
		return err
	}
	req := netctl.Request{Op: netctl.OpDenials}
	if f.Since > 0 {
		req.Since = w.now().Add(-f.Since)
	}
	list := []denial{}
	for _, ns := range spaces {
		req.Namespace = ns
		rep, err := do(c, req)
		if err != nil {
			return fmt.Errorf("denials of %s: %w", ns, err)
		}
		for _, d := range rep.Denials {
			flag := d.Namespace
			if flag == def {
				flag = ""
			}
			cmd, why := netctl.Advice(d, netctl.ScopeSession, flag)
			list = append(list, denial{Denial: d, Allow: cmd, Why: why})
		}
	}
	slices.SortStableFunc(list, func(a, b denial) int { return a.Time.Compare(b.Time) })
	if f.JSON {
		return writeJSON(out, struct {
			Denials []denial `json:"denials"`
		}{list})
	}
	for _, d := range list {
		advice := d.Allow
		if advice == "" {
			advice = d.Why
		}
		if _, err := fmt.Fprintf(out, "%s  %s  %s (%s): %s\n", stamp(d.Time), quote.String(d.Namespace), netctl.What(d.Denial), times(d.Count), advice); err != nil {
			return err
		}
	}
	return nil
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// scope is the scope the flags ask for.
func (f allowCmd) scope() string {
	switch {
	case f.Session:
		return netctl.ScopeSession
	case f.Always:
		return netctl.ScopeAlways
	}
	return DefaultScope
}

// allow approves a name.
func (w world) allow(c *netctl.Conn, f allowCmd, out io.Writer) error {
	ports := []string{}
	for _, p := range f.Port {
		proto, _, _ := strings.Cut(p, " ")
		if proto != "tcp" && proto != "udp" {
			return fmt.Errorf("--port %s: want tcp PORT or udp PORT", quote.String(p))
		}
		ports = append(ports, p)
	}
	ns, err := w.namespace(c, f.Namespace)
	if err != nil {
		return err
	}
	req := netctl.Request{Op: netctl.OpAllow, Namespace: ns, Name: f.Name, Scope: f.scope(), Ports: ports}
	rep, err := do(c, req)
	if err != nil {
		return fmt.Errorf("allow %s in %s: %w", quote.String(f.Name), ns, err)
	}
	if f.JSON {
		return writeJSON(out, struct {
			Namespace string   `json:"namespace"`
			Name      string   `json:"name"`
			Scope     string   `json:"scope"`
			Ports     []string `json:"ports"`
			Held      int      `json:"held"`
		}{ns, f.Name, req.Scope, ports, rep.Held})
	}
	line := fmt.Sprintf("allowed %s in %s %s", quote.String(f.Name), ns, scopeWords(req.Scope))
	if len(ports) > 0 {
		line += " on " + strings.Join(ports, ", ")
	}
	if rep.Held > 0 {
		line += fmt.Sprintf(", answering %d held %s", rep.Held, plural(rep.Held, "query", "queries"))
	}
	_, err = fmt.Fprintln(out, line)
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// scopeWords says how long an approval lasts.
func scopeWords(scope string) string {
	switch scope {
	case netctl.ScopeOnce:
		return "once (its held queries, or its next query within a minute)"
	case netctl.ScopeSession:
		return "until the running sessions end"
	case netctl.ScopeAlways:
		return "until revoked"
	}
	return "(" + quote.String(scope) + ")"
}

// revoke removes the user's approvals of a name.
func (w world) revoke(c *netctl.Conn, f revokeCmd, out io.Writer) error {
	ns, err := w.namespace(c, f.Namespace)
	if err != nil {
		return err
	}
	if _, err := do(c, netctl.Request{Op: netctl.OpRevoke, Namespace: ns, Name: f.Name}); err != nil {
		return fmt.Errorf("revoke %s in %s: %w", quote.String(f.Name), ns, err)
	}
	if f.JSON {
		return writeJSON(out, struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		}{ns, f.Name})
	}
	_, err = fmt.Fprintf(out, "revoked %s in %s\n", quote.String(f.Name), ns)
	return err
}

// list prints the allowances of the namespace with their source.
func (w world) list(c *netctl.Conn, f listCmd, out io.Writer) error {
	ns, err := w.namespace(c, f.Namespace)
	if err != nil {
		return err
	}
	rep, err := do(c, netctl.Request{Op: netctl.OpList, Namespace: ns})
	if err != nil {
		return fmt.Errorf("list %s: %w", ns, err)
	}
	if f.JSON {
		a := rep.Allowances
		if a == nil {
			a = []netctl.Allowance{}
		}
		return writeJSON(out, struct {
			Namespace  string             `json:"namespace"`
			Allowances []netctl.Allowance `json:"allowances"`
		}{ns, a})
	}
	for _, a := range rep.Allowances {
		ports := strings.Join(a.Ports, ", ")
		if len(a.Ports) == 0 {
			var def []string
			for _, p := range netpolicy.DefaultPorts {
				def = append(def, p.String())
			}
			ports = strings.Join(def, ", ")
		}
		if a.Scope == netctl.ScopeEnded {
			ports = "-"
		}
		if _, err := fmt.Fprintf(out, "%s  %s  %s\n", quote.String(a.Pattern), quote.String(ports), source(a)); err != nil {
			return err
		}
		for _, f := range a.Flows {
			if _, err := fmt.Fprintf(out, "  open %s %s %d until %s\n", quote.String(f.Addr), quote.String(f.Proto), f.Port, stamp(f.Until)); err != nil {
				return err
			}
		}
	}
	return nil
}

// source says where an allowance comes from.
func source(a netctl.Allowance) string {
	s := quote.String(a.Source)
	if a.Source != "approval" {
		return s
	}
	s += " " + quote.String(a.Scope)
	if a.Scope == netctl.ScopeEnded {
		return s + " (its flows stay open until each closes)"
	}
	if a.By != 0 {
		s += fmt.Sprintf(" by uid %d", a.By)
	} else {
		s += " by root"
	}
	if !a.Until.IsZero() {
		s += " until " + stamp(a.Until)
	}
	return s
}
