package net

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Keys of net watch and what they do to the selected held name.
const (
	KeyOnce    = 'o'
	KeySession = 's'
	KeyAlways  = 'a'
	KeyDeny    = 'd'
)

// keyScopes maps the allow keys to their scope.
var keyScopes = map[byte]string{KeyOnce: netctl.ScopeOnce, KeySession: netctl.ScopeSession, KeyAlways: netctl.ScopeAlways}

// maxRefused is how many of the latest refusals the screen keeps.
const maxRefused = 10

// held is a query netns-dns holds while it asks.
type held struct {
	ns, name, typ string
	until         time.Time
	// seen: when net watch printed it (line mode); a bare key answers
	// the one held name only a second after that.
	seen time.Time
}

// bareKeyAfter is how long the one held name must have been printed
// before a key without a name answers it (line mode): the sandbox times
// its lookups, and could put another name in its place the moment the
// name the user was reading ran out.
const bareKeyAfter = time.Second

// board is what net watch shows: the held names, oldest first, the
// latest refusals, the selection and the outcome of the last key.
//
// The selection is a name, not a place in the list: the sandbox asks
// every held name and knows when each hold ends, so a list that moved
// under the user's key would let it answer a name the screen never
// showed selected. It follows its name when names before it go; once
// its name has gone (answered, refused, run out) nothing is selected
// until j or k picks again. Until then the oldest is selected.
type board struct {
	held    []held
	refused []netctl.Event
	sel     int // index of picked in held; -1 none
	picked  *held
	gone    bool // picked has gone since the last j or k
	status  string
}

// apply takes in one event.
func (b *board) apply(ev netctl.Event) {
	drop := func() {
		b.held = slices.DeleteFunc(b.held, func(h held) bool { return h.ns == ev.Namespace && h.name == ev.Name })
	}
	switch ev.Kind {
	case netctl.EventHeld:
		if !slices.ContainsFunc(b.held, func(h held) bool { return h.ns == ev.Namespace && h.name == ev.Name }) {
			b.held = append(b.held, held{ns: ev.Namespace, name: ev.Name, typ: ev.Type, until: ev.Until})
		}
	case netctl.EventRefused:
		drop()
		b.refused = append(b.refused, ev)
		if len(b.refused) > maxRefused {
			b.refused = b.refused[len(b.refused)-maxRefused:]
		}
	case netctl.EventApproved, netctl.EventReleased:
		drop()
	}
	b.clamp()
}

// expire drops the holds that ran out.
func (b *board) expire(now time.Time) {
	b.held = slices.DeleteFunc(b.held, func(h held) bool { return !h.until.IsZero() && now.After(h.until) })
	b.clamp()
}

// clamp puts sel on the picked name, or on none once it has gone; with
// nothing picked and nothing gone, the oldest is picked.
func (b *board) clamp() {
	b.sel = -1
	if b.picked != nil {
		if i := b.index(*b.picked); i >= 0 {
			b.sel = i
			return
		}
		b.picked, b.gone = nil, true
	}
	if !b.gone && len(b.held) > 0 {
		b.pick(0)
	}
}

func (b *board) index(h held) int {
	return slices.IndexFunc(b.held, func(x held) bool { return x.ns == h.ns && x.name == h.name })
}

func (b *board) pick(i int) {
	h := b.held[i]
	b.sel, b.picked, b.gone = i, &h, false
}

// move moves the selection d names down (up if negative); with none, it
// selects the oldest.
func (b *board) move(d int) {
	if len(b.held) == 0 {
		return
	}
	if b.sel < 0 {
		b.pick(0)
		return
	}
	b.pick(max(0, min(b.sel+d, len(b.held)-1)))
}

// selected is the held name a key acts on (ok false: none is selected).
func (b *board) selected() (held, bool) {
	if b.sel < 0 || b.sel >= len(b.held) {
		return held{}, false
	}
	return b.held[b.sel], true
}

// saw marks the held name of ev as printed at t (its first held event).
func (b *board) saw(ev netctl.Event, t time.Time) {
	if ev.Kind != netctl.EventHeld {
		return
	}
	for i := range b.held {
		if h := &b.held[i]; h.ns == ev.Namespace && h.name == ev.Name && h.seen.IsZero() {
			h.seen = t
		}
	}
}

// eventLine is an event as line mode prints it.
func eventLine(ev netctl.Event) string {
	what := quote.String(ev.Name)
	if ev.Type != "" {
		what = quote.String(ev.Type) + " " + what
	}
	ns := quote.String(ev.Namespace)
	switch ev.Kind {
	case netctl.EventHeld:
		return fmt.Sprintf("held %s %s until %s: o allow once, s for the session, a always, d deny", ns, what, stamp(ev.Until))
	case netctl.EventApproved:
		return fmt.Sprintf("approved %s %s %s", ns, what, quote.String(ev.Scope))
	case netctl.EventReleased:
		if ev.Answered {
			return fmt.Sprintf("released %s %s answered", ns, what)
		}
		return fmt.Sprintf("released %s %s refused", ns, what)
	}
	return fmt.Sprintf("%s %s %s", quote.String(ev.Kind), ns, what)
}

// render is the screen, one string a line.
func (b *board) render(now time.Time) []string {
	lines := []string{"claude-sandbox net watch: o allow once, s for the session, a always, d deny, j/k select, q quit", ""}
	if len(b.held) == 0 {
		lines = append(lines, "no query is held")
	} else {
		lines = append(lines, "held, oldest first:")
	}
	for i, h := range b.held {
		mark := " "
		if i == b.sel {
			mark = ">"
		}
		left := ""
		if !h.until.IsZero() {
			left = fmt.Sprintf("  %ds left", max(0, int(h.until.Sub(now).Round(time.Second)/time.Second)))
		}
		lines = append(lines, fmt.Sprintf("%s %s  %s %s%s", mark, quote.String(h.ns), quote.String(h.typ), quote.String(h.name), left))
	}
	if len(b.refused) > 0 {
		lines = append(lines, "", "refused, latest last:")
		for _, ev := range b.refused {
			lines = append(lines, fmt.Sprintf("  %s  %s  %s %s", stamp(ev.Time), quote.String(ev.Namespace), quote.String(ev.Type), quote.String(ev.Name)))
		}
	}
	if b.gone && len(b.held) > 0 {
		lines = append(lines, "", "the selected name has gone: j or k selects another")
	}
	if b.status != "" {
		lines = append(lines, "", b.status)
	}
	return lines
}

// watch streams the events of ns (every namespace of the user if "") and
// answers held queries with one key. On a terminal (stdin) it shows a
// live screen in raw mode, put back on exit and on the signals of w; else
// it prints one line per event and reads answers as lines ("o", "s", "a",
// "d", followed by the name unless only one is held).
func (w world) watch(ctx context.Context, c *netctl.Conn, ns string, stdio multicall.Stdio) error {
	if _, err := do(c, netctl.Request{Op: netctl.OpWatch, Namespace: ns}); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	events := make(chan netctl.Event)
	lost := make(chan error, 1)
	go func() {
		for {
			var ev netctl.Event
			if err := c.Recv(&ev); err != nil {
				lost <- err
				return
			}
			events <- ev
		}
	}()

	f, isFile := stdio.In.(*os.File)
	raw := isFile && term.IsTerminal(int(f.Fd()))
	if raw {
		state, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("watch: raw mode: %w", err)
		}
		defer term.Restore(int(f.Fd()), state)
	}
	sigs := make(chan os.Signal, 1)
	if len(w.signals) > 0 {
		signal.Notify(sigs, w.signals...)
		defer signal.Stop(sigs)
	}

	input := make(chan string)
	go readInput(stdio.In, raw, input)

	b := &board{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	draw := func() {
		if raw {
			b.expire(w.now())
			io.WriteString(stdio.Out, "\x1b[H\x1b[2J"+strings.Join(b.render(w.now()), "\r\n")+"\r\n")
		}
	}
	say := func(s string) {
		b.status = s
		if !raw {
			fmt.Fprintln(stdio.Out, s)
		}
	}
	draw()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-sigs:
			if raw {
				io.WriteString(stdio.Out, "\r\n")
			}
			return multicall.Exit(128 + int(s.(syscall.Signal)))
		case err := <-lost:
			return fmt.Errorf("watch: netns-dns ended the connection (%w): is it running? sudo systemctl status netns-dns", err)
		case ev := <-events:
			b.apply(ev)
			b.saw(ev, w.now())
			if !raw {
				fmt.Fprintln(stdio.Out, eventLine(ev))
			}
		case <-tick.C:
		case in, ok := <-input:
			if !ok {
				if raw {
					return nil
				}
				input = nil // stdin ended: watch on, answer nothing
				continue
			}
			if quit := w.key(b, in, raw, say); quit {
				if raw {
					io.WriteString(stdio.Out, "\r\n")
				}
				return nil
			}
		}
		draw()
	}
}

// readInput sends keys (raw: each byte) or lines to ch, and closes it at
// the end of the input.
func readInput(r io.Reader, raw bool, ch chan<- string) {
	defer close(ch)
	if raw {
		buf := make([]byte, 64)
		for {
			n, err := r.Read(buf)
			for _, k := range buf[:n] {
				ch <- string(k)
			}
			if err != nil {
				return
			}
		}
	}
	s := bufio.NewScanner(r)
	for s.Scan() {
		ch <- s.Text()
	}
}

// key acts on one key (raw) or line; it reports whether to quit.
func (w world) key(b *board, in string, raw bool, say func(string)) bool {
	cmd, name, _ := strings.Cut(strings.TrimSpace(in), " ")
	if raw {
		switch in {
		case "q", "\x03", "\x04":
			return true
		case "j", "\x0e":
			b.move(1)
			return false
		case "k", "\x10":
			b.move(-1)
			return false
		}
	}
	if len(cmd) != 1 {
		if cmd != "" && !raw {
			say("unknown command " + quote.String(cmd) + ": o, s, a or d, then optionally the name")
		}
		return false
	}
	h, ok := b.selected()
	if !raw {
		// Lines: the one held name, printed a second ago at least, or
		// the name given. Never "the oldest", nor a name just printed:
		// the sandbox times its holds, and could put another name there
		// the moment the one read ran out.
		ok = len(b.held) == 1
		if ok {
			h = b.held[0]
		}
		if ok && strings.TrimSpace(name) == "" && (h.seen.IsZero() || w.now().Before(h.seen.Add(bareKeyAfter))) {
			say(fmt.Sprintf("%s was held less than a second ago: name it (%s %s)", quote.String(h.name), cmd, quote.String(h.name)))
			return false
		}
	}
	if name = strings.TrimSpace(name); name != "" {
		i := slices.IndexFunc(b.held, func(h held) bool { return h.name == name })
		if i < 0 {
			say("no held query of " + quote.String(name))
			return false
		}
		h, ok = b.held[i], true
	}
	k := cmd[0]
	_, isAllow := keyScopes[k]
	if !isAllow && k != KeyDeny {
		if !raw {
			say("unknown command " + quote.String(cmd) + ": o, s, a or d, then optionally the name")
		}
		return false
	}
	if !ok && len(b.held) > 0 && !raw {
		say(fmt.Sprintf("%d names are held: name one (%s NAME)", len(b.held), cmd))
		return false
	}
	if !ok && len(b.held) > 0 {
		say("no held name is selected (the selected one has gone): j or k selects one")
		return false
	}
	if !ok {
		say("no query is held")
		return false
	}
	say(w.answer(h, k))
	b.held = slices.DeleteFunc(b.held, func(x held) bool { return x.ns == h.ns && x.name == h.name })
	b.clamp()
	return false
}

// answer sends the approval (or the denial) that key k gives to h, on a
// connection of its own, and says what happened.
func (w world) answer(h held, k byte) string {
	c, err := dial(w.socket)
	if err != nil {
		return "error: " + err.Error()
	}
	defer c.Close()
	if k == KeyDeny {
		if _, err := do(c, netctl.Request{Op: netctl.OpRevoke, Namespace: h.ns, Name: h.name}); err != nil {
			return "error: deny " + quote.String(h.name) + ": " + err.Error()
		}
		return fmt.Sprintf("denied %s in %s", quote.String(h.name), quote.String(h.ns))
	}
	scope := keyScopes[k]
	rep, err := do(c, netctl.Request{Op: netctl.OpAllow, Namespace: h.ns, Name: h.name, Scope: scope})
	if err != nil {
		return "error: allow " + quote.String(h.name) + ": " + err.Error()
	}
	return fmt.Sprintf("allowed %s in %s %s (%d held %s answered)", quote.String(h.name), quote.String(h.ns), scopeWords(scope), rep.Held, plural(rep.Held, "query", "queries"))
}
