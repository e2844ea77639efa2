package netnsdns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// onceGrace is how long a "once" approval keeps answering after its first
// answer: the A and AAAA queries of one lookup, and their retransmissions,
// come within it.
const onceGrace = 5 * time.Second

// maxApprovalPorts bounds the ports of one approval (each is an element
// of the approved set for each address of its answers).
const maxApprovalPorts = 64

// maxApprovals bounds the approvals of one namespace.
const maxApprovals = 1024

// approval is one name (or *.NAME) an owner of a namespace approved.
type approval struct {
	Pattern string            `json:"pattern"`
	Ports   []netpolicy.Ports `json:"ports"`
	Scope   string            `json:"scope"`
	By      uint32            `json:"by"`
	Time    time.Time         `json:"time"`
	// Until ends a once approval (OnceWindow, then onceGrace after its
	// first answer); zero for the others.
	Until time.Time `json:"until,omitzero"`
}

// approvals are the approvals of every namespace, by namespace name; the
// always ones are also in dir (one NAME.json each), when dir is set.
type approvals struct {
	dir string
	// write, if set, replaces writeAtomic (a test's slow disk).
	write func(path string, data []byte) error

	// wmu serialises the changes, whose files are written without mu: the
	// queries of every namespace take mu, and must not wait for a disk.
	wmu sync.Mutex
	mu  sync.Mutex
	byN map[string][]approval
}

// match returns the approval of ns that covers name (nil if none) and
// starts the grace of a once approval it uses.
func (a *approvals) match(ns, name string, now time.Time) *approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.byN[ns]
	for i := range list {
		ap := &list[i]
		if !ap.Until.IsZero() && !now.Before(ap.Until) {
			continue
		}
		if !patternCovers(ap.Pattern, name) {
			continue
		}
		if ap.Scope == netctl.ScopeOnce {
			ap.Until = minTime(ap.Until, now.Add(onceGrace))
		}
		out := *ap
		return &out
	}
	return nil
}

// add records ap for ns (replacing an approval of the same pattern) and
// persists the always ones; the approval holds once they are written.
func (a *approvals) add(ns string, ap approval, now time.Time) error {
	next := func(list []approval) []approval {
		list = live(list, now)
		list = slices.DeleteFunc(list, func(x approval) bool { return x.Pattern == ap.Pattern })
		return append(list, ap)
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	list := next(a.current(ns))
	if len(list) > maxApprovals {
		return fmt.Errorf("namespace %s has %d approvals already: revoke some (claude-sandbox net revoke NAME)", ns, len(list)-1)
	}
	if err := a.save(ns, list); err != nil {
		return err
	}
	a.change(ns, next)
	return nil
}

// remove removes the approvals of ns that drop returns true for, and
// returns them; they end once the file is written.
func (a *approvals) remove(ns string, drop func(approval) bool) ([]approval, error) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	gone := slices.Clone(a.current(ns))
	gone = slices.DeleteFunc(gone, func(x approval) bool { return !drop(x) })
	if len(gone) == 0 {
		return nil, nil
	}
	next := func(list []approval) []approval {
		return slices.DeleteFunc(slices.Clone(list), drop)
	}
	if slices.ContainsFunc(gone, func(x approval) bool { return x.Scope == netctl.ScopeAlways }) {
		if err := a.save(ns, next(a.current(ns))); err != nil {
			return nil, err
		}
	}
	a.change(ns, next)
	return gone, nil
}

// current is a copy of the approvals of ns.
func (a *approvals) current(ns string) []approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.byN[ns])
}

// change applies next to the approvals of ns as they are now (a query
// may have started a once approval's grace since current).
func (a *approvals) change(ns string, next func([]approval) []approval) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byN == nil {
		a.byN = map[string][]approval{}
	}
	a.byN[ns] = next(a.byN[ns])
}

// list returns the live approvals of ns.
func (a *approvals) list(ns string, now time.Time) []approval {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(live(a.byN[ns], now))
}

func live(list []approval, now time.Time) []approval {
	return slices.DeleteFunc(slices.Clone(list), func(x approval) bool { return !x.Until.IsZero() && !now.Before(x.Until) })
}

// save writes the always approvals of list, those of ns, to
// dir/NAME.json, atomically; a.wmu is held.
func (a *approvals) save(ns string, list []approval) error {
	if a.dir == "" {
		return nil
	}
	var always []approval
	for _, ap := range list {
		if ap.Scope == netctl.ScopeAlways {
			always = append(always, ap)
		}
	}
	path := filepath.Join(a.dir, ns+".json")
	if len(always) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("approvals of %s: %w", ns, err)
		}
		return nil
	}
	b, err := json.MarshalIndent(always, "", "\t")
	if err != nil {
		return err
	}
	if err := a.writeFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("approvals of %s: %w", ns, err)
	}
	return nil
}

func (a *approvals) writeFile(path string, data []byte) error {
	if a.write != nil {
		return a.write(path, data)
	}
	return writeAtomic(path, data)
}

// load reads the always approvals of every namespace from dir; a file
// that does not parse is reported and skipped.
func (a *approvals) load() []error {
	if a.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(a.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{fmt.Errorf("approvals: %w", err)}
	}
	var errs []error
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byN == nil {
		a.byN = map[string][]approval{}
	}
	for _, e := range entries {
		ns, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !nsname.Valid(ns) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(a.dir, e.Name())
		list, err := readApprovals(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.byN[ns] = list
	}
	return errs
}

func readApprovals(path string) ([]approval, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	var list []approval
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("approvals: %s: %w", path, err)
	}
	return slices.DeleteFunc(list, func(ap approval) bool {
		_, err := netpolicy.ParsePattern(ap.Pattern)
		return err != nil || ap.Scope != netctl.ScopeAlways || len(ap.Ports) == 0
	}), nil
}

// writeAtomic replaces path with data: a temporary file beside it,
// synced, renamed over it, and the directory synced.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// patternCovers reports whether pattern (NAME or *.NAME) covers name
// (lower case, no trailing dot).
func patternCovers(pattern, name string) bool {
	p := netpolicy.Policy{Domains: []netpolicy.PolicyDomain{{Pattern: pattern}}}
	return p.Allows(name) != nil
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// approvalPorts are the ports of an allow request: those it names, or the
// ports of a domain line without any.
func approvalPorts(req []string) ([]netpolicy.Ports, error) {
	if len(req) == 0 {
		return slices.Clone(netpolicy.DefaultPorts), nil
	}
	var out []netpolicy.Ports
	n := 0
	for _, s := range req {
		p, err := netpolicy.ParsePorts(s)
		if err != nil {
			return nil, err
		}
		n += int(p.Hi-p.Lo) + 1
		out = append(out, p)
	}
	if n > maxApprovalPorts {
		return nil, fmt.Errorf("ports: %d ports, more than %d: name fewer (an approval opens each port of each address)", n, maxApprovalPorts)
	}
	return out, nil
}
