//go:build linux

package network

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

const stubResolv = "nameserver 127.0.0.53\n"

// hasLink reports whether the host namespace has a link called name.
func (w *world) hasLink(name string) bool {
	return exec.Command("ip", "-n", w.host, "link", "show", "dev", name).Run() == nil
}

func (w *world) hasTable() bool {
	return exec.Command("ip", "netns", "exec", w.host, "nft", "list", "table", "inet", nft.TableName).Run() == nil
}

// assertUp checks that status says up, and what up made is there.
func (w *world) assertUp(name string) {
	w.t.Helper()
	r := w.setup("status", name)
	if r.Code != 0 || !strings.Contains(r.Stdout, "state     up") {
		w.t.Fatalf("status %s after up: %s", name, r)
	}
	out := testutil.InNetns(w.t, w.host, "ip", "-d", "link", "show", "dev", netcfg.HostVeth(name))
	if !strings.Contains(out, "master br-netns") || !strings.Contains(out, "isolated on") || !strings.Contains(out, "state UP") {
		w.t.Fatalf("host end of %s: %s", name, out)
	}
	route := testutil.InNetns(w.t, name, "ip", "-4", "route", "show", "default")
	if !strings.Contains(route, "default via "+gateway+" dev eth0") {
		w.t.Fatalf("default route in %s: %q", name, route)
	}
	if !w.hasTable() {
		w.t.Fatalf("no table inet %s after up %s", nft.TableName, name)
	}
}

// assertGone checks that nothing of namespace name is left.
func (w *world) assertGone(name string) {
	w.t.Helper()
	if _, err := os.Lstat("/run/netns/" + name); !errors.Is(err, os.ErrNotExist) {
		w.t.Errorf("/run/netns/%s left behind (%v)", name, err)
	}
	if w.hasLink(netcfg.HostVeth(name)) {
		w.t.Errorf("link %s left behind", netcfg.HostVeth(name))
	}
	if _, err := os.Lstat(filepath.Join(w.etc, name)); !errors.Is(err, os.ErrNotExist) {
		w.t.Errorf("%s left behind (%v)", filepath.Join(w.etc, name), err)
	}
}

func TestUpDownIdempotent(t *testing.T) {
	w := newWorld(t, stubResolv, "")
	a, b := testutil.UniqueName("si", 9), testutil.UniqueName("sj", 9)
	w.up(a)
	w.assertUp(a)
	addr := sandboxAddr(t, a)
	resolv, err := os.ReadFile(filepath.Join(w.etc, a, "resolv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	w.mustSetup("up", a)
	w.assertUp(a)
	if again := sandboxAddr(t, a); again != addr {
		t.Fatalf("second up moved %s from %s to %s", a, addr, again)
	}
	if again, _ := os.ReadFile(filepath.Join(w.etc, a, "resolv.conf")); string(again) != string(resolv) {
		t.Fatalf("second up rewrote resolv.conf: %q, was %q", again, resolv)
	}
	if want, _ := netcfg.Address(a, netip.MustParsePrefix(gateway+"/16"), nil); addr != want {
		t.Fatalf("address of %s = %s, want the derived %s", a, addr, want)
	}

	w.up(b)
	// Down of one of two keeps the firewall; of the last, removes it.
	for i := range 2 {
		w.mustSetup("down", a)
		w.assertGone(a)
		if !w.hasTable() {
			t.Fatalf("down #%d of %s with %s still up removed the firewall", i+1, a, b)
		}
	}
	if r := w.setup("status", a); r.Code != 1 || !strings.Contains(r.Stderr, "netns-setup: namespace "+a+" is not up (missing: netns; resolv.conf)") {
		t.Fatalf("status after down: %s", r)
	}
	w.assertUp(b)
	for range 2 {
		w.mustSetup("down", b)
		w.assertGone(b)
		if w.hasTable() {
			t.Fatalf("down of the last namespace left the firewall")
		}
	}
}

// TestRepair starts from partial states (as left by a crash or by hand) and
// checks that up completes them and down removes everything.
func TestRepair(t *testing.T) {
	tests := []struct {
		name   string
		damage func(w *world, ns string)
	}{
		{"namespace without veth", func(w *world, ns string) {
			ip(t, "netns", "add", ns)
		}},
		{"veth without address", func(w *world, ns string) {
			ip(t, "netns", "add", ns)
			ip(t, "-n", w.host, "link", "add", netcfg.HostVeth(ns), "type", "veth", "peer", "name", "eth0", "netns", ns)
		}},
		{"host end without peer inside", func(w *world, ns string) {
			ip(t, "-n", w.host, "link", "add", netcfg.HostVeth(ns), "type", "veth", "peer", "name", "stray0")
		}},
		{"empty file of a killed up", func(w *world, ns string) {
			if err := os.WriteFile("/run/netns/"+ns, nil, 0o444); err != nil {
				t.Fatal(err)
			}
		}},
		{"wrong address", func(w *world, ns string) {
			w.mustSetup("up", ns)
			ip(t, "-n", ns, "address", "flush", "dev", "eth0")
			ip(t, "-n", ns, "address", "add", "10.10.99.99/24", "dev", "eth0")
		}},
		{"port released and down", func(w *world, ns string) {
			w.mustSetup("up", ns)
			ip(t, "-n", w.host, "link", "set", netcfg.HostVeth(ns), "nomaster")
			ip(t, "-n", w.host, "link", "set", netcfg.HostVeth(ns), "down")
			ip(t, "-n", ns, "link", "set", "lo", "down")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, stubResolv, "")
			ns := testutil.UniqueName("sr", 9)
			t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
			tt.damage(w, ns)
			w.up(ns)
			w.assertUp(ns)
			want, _ := netcfg.Address(ns, netip.MustParsePrefix(gateway+"/16"), nil)
			if got := sandboxAddr(t, ns); got != want {
				t.Fatalf("address after repair = %s, want %s", got, want)
			}
			if w.hasLink("stray0") {
				t.Fatalf("the stray veth's peer is still there")
			}
			w.mustSetup("down", ns)
			w.assertGone(ns)
			if w.hasTable() {
				t.Fatalf("firewall left after the last down")
			}
		})
	}
}

// TestKilledUp kills up at various moments; the next up must complete, and
// down must leave nothing.
func TestKilledUp(t *testing.T) {
	w := newWorld(t, stubResolv, "")
	ns := testutil.UniqueName("sk", 9)
	w.t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	for _, delay := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond} {
		cmd := w.setupCmd("up", ns)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		w.mustSetup("up", ns)
		w.assertUp(ns)
		w.mustSetup("down", ns)
		w.assertGone(ns)
		if w.hasTable() {
			t.Fatalf("killed after %v: firewall left after down", delay)
		}
	}
}

// TestManyAtOnce brings 200 namespaces up concurrently, then down.
func TestManyAtOnce(t *testing.T) {
	const n = 200
	w := newWorld(t, stubResolv, "")
	prefix := testutil.UniqueName("m", 5)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return // down removed them all, as checked
		}
		for _, ns := range names {
			w.setup("down", ns)
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	run := func(verb string) {
		var wg sync.WaitGroup
		errs := make(chan string, n)
		for _, ns := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if out, err := w.setupCmd(verb, ns).CombinedOutput(); err != nil {
					errs <- fmt.Sprintf("%s %s: %v: %s", verb, ns, err, out)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	run("up")
	seen := map[netip.Addr]string{}
	for _, ns := range names {
		a := sandboxAddr(t, ns)
		if other, dup := seen[a]; dup {
			t.Fatalf("%s and %s both have %s", ns, other, a)
		}
		seen[a] = ns
	}
	out := testutil.InNetns(t, w.host, "ip", "-o", "link", "show", "master", "br-netns")
	if got := strings.Count(out, "\n"); got != n {
		t.Fatalf("%d ports on br-netns, want %d", got, n)
	}
	w.assertUp(names[0])
	w.assertUp(names[n-1])
	run("down")
	for _, ns := range names {
		w.assertGone(ns)
	}
	if w.hasTable() {
		t.Fatalf("firewall left after all went down")
	}
}
