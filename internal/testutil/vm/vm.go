//go:build linux

// Package vm runs a test binary inside a guest with a real kernel: Debian's
// kernel package under qemu, the host's root read-only over virtio-9p with
// a tmpfs overlay, the freshly built product installed into the overlay,
// and systemd as PID 1 on cgroup v2. The guest's test result and output
// are the calling test's own. Selected with CLAUDE_SBX_E2E=vm.
package vm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// GuestEnv is set to 1 in the environment of the test binary in the guest.
const GuestEnv = "CLAUDE_SBX_VM_GUEST"

// CacheEnv names the cache of kernel and busybox packages, default
// /var/cache/claude-sandbox-tests/vm (outside the repository).
const CacheEnv = "CLAUDE_SBX_VM_CACHE"

// InGuest skips t unless it runs in the guest.
func InGuest(t testing.TB) {
	t.Helper()
	if os.Getenv(GuestEnv) != "1" {
		t.Skip("runs only inside the guest (internal/testutil/vm)")
	}
}

// Options says what to run in the guest.
type Options struct {
	// Pkg is the directory of the package whose test binary runs.
	Pkg string
	// Run is the -test.run pattern in the guest.
	Run string
	// Env is added to the guest test's environment.
	Env []string
	// Timeout bounds the whole boot and run.
	Timeout time.Duration
}

// Run boots the guest and runs the test binary of o.Pkg in it as root.
func Run(t *testing.T, o Options) {
	t.Helper()
	testutil.E2E(t, testutil.E2EVM)
	testutil.RequireRoot(t)
	qemu := testutil.RequireCommand(t, "qemu-system-x86_64")
	for _, c := range []string{"apt-get", "apt-cache", "dpkg", "xz", "make", "go"} {
		testutil.RequireCommand(t, c)
	}
	if o.Timeout == 0 {
		o.Timeout = 8 * time.Minute
	}
	k := kernel(t)
	job := t.TempDir()
	if err := os.Chmod(job, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(job, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("make", "--no-print-directory", "-C", testutil.ModuleRoot(t), "install", "DESTDIR="+root).CombinedOutput(); err != nil {
		t.Fatalf("make install DESTDIR=%s: %v\n%s", root, err, out)
	}
	if err := stage(root, job); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(job, "test.bin")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = o.Pkg
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c in %s: %v\n%s", o.Pkg, err, out)
	}
	args := "-test.v -test.count=1 -test.run " + shq(o.Run)
	env := append([]string{GuestEnv + "=1", "CI=" + os.Getenv("CI"), testutil.E2EEnv + "=" + os.Getenv(testutil.E2EEnv)}, o.Env...)
	for i := range env {
		env[i] = shq(env[i])
	}
	script := "#!/bin/sh\ncd /job && exec env " + strings.Join(env, " ") + " /job/test.bin " + args + "\n"
	if err := os.WriteFile(filepath.Join(job, "test.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	accel := "tcg"
	if kvmWorks(t, qemu, k) {
		accel = "kvm"
	}
	t.Logf("vm: booting %s under %s (-smp 2 -m 1536)", filepath.Base(k.vmlinux), accel)
	start := time.Now()
	console, err := boot(qemu, k, accel, job, o.Timeout, nil)
	t.Logf("vm: guest done after %v (%s)", time.Since(start).Round(time.Second), accel)
	log, _ := os.ReadFile(filepath.Join(job, "out", "test.log"))
	rcText, rerr := os.ReadFile(filepath.Join(job, "out", "rc"))
	t.Logf("guest test output:\n%s", log)
	if rerr != nil {
		t.Fatalf("the guest wrote no result (%v, qemu: %v); console:\n%s", rerr, err, tail(console, 60))
	}
	if rc, _ := strconv.Atoi(strings.TrimSpace(string(rcText))); rc != 0 {
		t.Fatalf("the test in the guest failed: exit %d", rc)
	}
}

// kvmWorks says whether a KVM guest gets as far as the initramfs's first
// line within a bounded time; on some machines /dev/kvm exists but a KVM
// guest never gets past early boot.
func kvmWorks(t *testing.T, qemu string, k kern) bool {
	t.Helper()
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		t.Logf("vm: no KVM (%v): software emulation (TCG)", err)
		return false
	} else {
		f.Close()
	}
	job := t.TempDir()
	seen := false
	boot(qemu, k, "kvm", job, 20*time.Second, func(line string) bool {
		if strings.Contains(line, initPrefix) {
			seen = true
			return true
		}
		return false
	})
	if !seen {
		t.Logf("vm: a KVM guest printed nothing of the initramfs in 20 s: software emulation (TCG)")
	}
	return seen
}

// boot runs qemu until it exits, timeout passes or stop returns true for a
// console line; it returns the console.
func boot(qemu string, k kern, accel, job string, timeout time.Duration, stop func(string) bool) (string, error) {
	if err := os.MkdirAll(filepath.Join(job, "out"), 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	acc := []string{"-accel", "tcg,thread=multi", "-cpu", "max"}
	if accel == "kvm" {
		acc = []string{"-accel", "kvm", "-cpu", "host"}
	}
	args := append(acc, "-smp", "2", "-m", "1536",
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot", "-nic", "none",
		"-kernel", k.vmlinux, "-initrd", k.initrd,
		"-append", "console=ttyS0 quiet loglevel=3 panic=-1 norandmaps systemd.show_status=auto",
		"-fsdev", "local,id=hr,path=/,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hr,mount_tag=hostroot",
		"-fsdev", "local,id=jb,path="+job+",security_model=none",
		"-device", "virtio-9p-pci,fsdev=jb,mount_tag=job")
	if _, err := os.Stat("/usr/share/qemu/qboot.rom"); err == nil {
		args = append(args, "-bios", "/usr/share/qemu/qboot.rom")
	}
	cmd := exec.CommandContext(ctx, qemu, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var console strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		console.WriteString(line + "\n")
		if stop != nil && stop(line) {
			cmd.Process.Kill()
			break
		}
	}
	io.Copy(io.Discard, out)
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("qemu: no power-off within %v", timeout)
	}
	return console.String(), err
}

type kern struct{ vmlinux, initrd, modules string }

// kernel fetches Debian's kernel and busybox-static into the cache with
// apt-get download (once) and builds the uncompressed kernel and the
// initramfs there.
func kernel(t *testing.T) kern {
	t.Helper()
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		cache = "/var/cache/claude-sandbox-tests/vm"
	}
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			testutil.Missing(t, "%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	debs := filepath.Join(cache, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		t.Fatal(err)
	}
	img := ""
	for _, l := range strings.Split(run(debs, "apt-cache", "depends", "linux-image-amd64"), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") && f[1] != "linux-image-amd64" {
			img = f[1]
			break
		}
	}
	if img == "" {
		testutil.Missing(t, "apt-cache depends linux-image-amd64 names no kernel package (run apt-get update)")
	}
	dir := filepath.Join(cache, img)
	k := kern{vmlinux: filepath.Join(dir, "vmlinux"), initrd: filepath.Join(dir, "initrd.gz"), modules: filepath.Join(dir, "kernel", "lib", "modules")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{img, "busybox-static"} {
		if m, _ := filepath.Glob(filepath.Join(debs, p+"_*.deb")); len(m) == 0 {
			run(debs, "apt-get", "download", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kernel", "boot")); err != nil {
		deb, _ := filepath.Glob(filepath.Join(debs, img+"_*.deb"))
		run(debs, "dpkg", "-x", deb[0], filepath.Join(dir, "kernel"))
	}
	if _, err := os.Stat(filepath.Join(dir, "bb", "bin", "busybox")); err != nil {
		deb, _ := filepath.Glob(filepath.Join(debs, "busybox-static_*.deb"))
		run(debs, "dpkg", "-x", deb[0], filepath.Join(dir, "bb"))
	}
	if _, err := os.Stat(k.vmlinux); err != nil {
		z, _ := filepath.Glob(filepath.Join(dir, "kernel", "boot", "vmlinuz-*"))
		if len(z) == 0 {
			t.Fatalf("%s has no boot/vmlinuz-*", img)
		}
		if err := extractVmlinux(z[0], k.vmlinux); err != nil {
			t.Fatal(err)
		}
	}
	if err := mkInitrd(dir, k.initrd); err != nil {
		t.Fatal(err)
	}
	return k
}

// extractVmlinux writes the ELF kernel inside a bzImage (XZ-compressed,
// as Debian's are) to dst: qemu's PVH boot of it skips the decompression
// that takes seconds under emulation.
func extractVmlinux(bz, dst string) error {
	b, err := os.ReadFile(bz)
	if err != nil {
		return err
	}
	off := bytes.Index(b, []byte("\xfd7zXZ\x00"))
	if off < 0 {
		return fmt.Errorf("%s: no XZ stream in the kernel image", bz)
	}
	cmd := exec.Command("xz", "-dc")
	cmd.Stdin = bytes.NewReader(b[off:])
	out, _ := cmd.Output() // xz complains about the data after the stream
	if !bytes.HasPrefix(out, []byte("\x7fELF")) {
		return fmt.Errorf("%s: the XZ stream is not an ELF kernel", bz)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// The modules the initramfs loads, in dependency order.
var modules = []string{
	"drivers/virtio/virtio_ring", "drivers/virtio/virtio", "drivers/virtio/virtio_pci_legacy_dev",
	"drivers/virtio/virtio_pci_modern_dev", "drivers/virtio/virtio_pci", "fs/netfs/netfs", "fs/fscache/fscache",
	"net/9p/9pnet", "net/9p/9pnet_virtio", "fs/9p/9p", "fs/overlayfs/overlay",
}

// mkInitrd writes a gzipped newc cpio: busybox, the modules, /init.
func mkInitrd(dir, dst string) error {
	mods, _ := filepath.Glob(filepath.Join(dir, "kernel", "lib", "modules", "*", "kernel"))
	if len(mods) == 0 {
		return fmt.Errorf("%s: no lib/modules/*/kernel", dir)
	}
	bb, err := os.ReadFile(filepath.Join(dir, "bb", "bin", "busybox"))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	w := &cpio{w: zw}
	for _, d := range []string{"bin", "mod", "dev", "proc", "sys", "lower", "rw", "newroot"} {
		w.entry(d, 0o040755, nil)
	}
	w.entry("bin/busybox", 0o100755, bb)
	w.entry("init", 0o100755, initScript(filepath.Join(dir, "kernel", "lib", "modules")))
	for _, m := range modules {
		b, err := os.ReadFile(filepath.Join(mods[0], m+".ko"))
		if err != nil {
			return err
		}
		w.entry("mod/"+filepath.Base(m)+".ko", 0o100644, b)
	}
	w.entry("TRAILER!!!", 0, nil)
	if w.err != nil {
		return w.err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// cpio writes the newc format the kernel unpacks.
type cpio struct {
	w   io.Writer
	ino int
	err error
}

func (c *cpio) entry(name string, mode uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o040000 != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	b := []byte(hdr + name + "\x00")
	b = append(b, make([]byte, pad4(len(b)))...)
	b = append(b, data...)
	b = append(b, make([]byte, pad4(len(data)))...)
	_, c.err = c.w.Write(b)
}

func pad4(n int) int { return (4 - n%4) % 4 }

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
