//go:build linux

package vm

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// initPrefix starts every console line the initramfs's /init prints; the
// KVM probe waits for it.
const initPrefix = "sbx-init:"

// initScript is the initramfs's /init: it loads the modules for virtio and
// 9p, mounts the host's root read-only over 9p with a tmpfs overlay on it
// and the job directory at /job, copies the staged tree (job/root, see
// stage) over the overlay and hands over to systemd. Everything that is a
// file in the guest is written by stage on the host; /init only mounts.
// mods is the host path of the unpacked kernel's lib/modules, shown to
// the guest at /usr/lib/modules.
func initScript(mods string) []byte {
	names := make([]string, len(modules))
	for i, m := range modules {
		names[i] = filepath.Base(m)
	}
	const p9 = "trans=virtio,version=9p2000.L,msize=524288"
	return []byte(`#!/bin/busybox sh
# written by internal/testutil/vm: mounts the guest's root, then systemd
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
say() { echo "` + initPrefix + ` $*" >/dev/console; }
die() { say "cannot $*"; sleep 1; poweroff -f; }
say "up $(cut -d' ' -f1 /proc/uptime)"
for m in ` + strings.Join(names, " ") + `; do
	insmod /mod/$m.ko || say "insmod $m failed (built in?)"
done
R=/newroot
mount -t 9p -o ` + p9 + `,ro,cache=loose hostroot /lower || die "mount the host's root over 9p"
mount -t tmpfs -o mode=755,size=60% guestrw /rw || die "mount the overlay's tmpfs"
mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work guestroot $R || die "mount the overlay"
mkdir -p $R/job
mount -t 9p -o ` + p9 + ` job $R/job || die "mount the job directory"
cp -a $R/job/root/. $R/ || die "copy the staged tree"
# The host's container markers would make systemd think it runs in one.
rm -f $R/.dockerenv $R/run/.containerenv
# A /tmp of the guest's own: systemd-tmpfiles would otherwise clean the
# host's /tmp out of the overlay, one whiteout per file.
mount -t tmpfs -o mode=1777,size=50% guesttmp $R/tmp || die "mount /tmp"
mkdir -p $R/usr/lib/modules
mount --bind /lower` + shq(mods) + ` $R/usr/lib/modules || die "bind the kernel's modules"
say "up $(cut -d' ' -f1 /proc/uptime): systemd"
for d in dev proc sys; do mount --move /$d $R/$d; done
exec switch_root $R /lib/systemd/systemd
`)
}

// Units the guest never starts, beside those the host enables for its
// getty, timers and multi-user targets (see masks): a throwaway guest
// with no network, no console login and nothing to keep between boots.
var alwaysMasked = []string{
	"serial-getty@ttyS0.service", "console-getty.service", "getty.target",
	"systemd-timesyncd.service", "systemd-pstore.service", "systemd-networkd-wait-online.service",
	"networking.service", "ssh.service", "cron.service", "rsyslog.service",
	"systemd-firstboot.service", "systemd-random-seed.service", "systemd-hwdb-update.service",
	"ldconfig.service", "systemd-journal-catalog-update.service", "systemd-update-done.service",
	"systemd-journal-flush.service", "systemd-sysusers.service", "systemd-remount-fs.service",
	"systemd-update-utmp.service", "systemd-update-utmp-runlevel.service",
	"systemd-modules-load.service", "modprobe@.service", "systemd-sysctl.service",
	"systemd-tmpfiles-setup-dev.service", "systemd-tmpfiles-clean.timer", "systemd-binfmt.service",
	"proc-sys-fs-binfmt_misc.automount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount",
	"sys-kernel-config.mount", "sys-fs-fuse-connections.mount", "dev-hugepages.mount", "dev-mqueue.mount",
}

// masks lists the units to mask in the guest: alwaysMasked and every unit
// the host's /etc/systemd/system enables for getty.target, timers.target
// and multi-user.target (databases, scrubbers, timers of this machine).
func masks(etc string) []string {
	m := append([]string(nil), alwaysMasked...)
	for _, t := range []string{"getty", "timers", "multi-user"} {
		ents, _ := os.ReadDir(filepath.Join(etc, "systemd", "system", t+".target.wants"))
		for _, e := range ents {
			m = append(m, e.Name())
		}
	}
	return m
}

// The test unit: runs /job/run.sh, then powers the guest off.
const testUnit = `[Unit]
Description=claude-sandbox guest test (/job/test.sh)
After=multi-user.target dbus.service systemd-logind.service systemd-user-sessions.service
Wants=dbus.service systemd-logind.service
SuccessAction=poweroff-force
FailureAction=poweroff-force
[Service]
Type=exec
ExecStart=/job/run.sh
StandardOutput=journal+console
StandardError=journal+console
[Install]
WantedBy=multi-user.target
`

// runScript runs the test, records its exit status in out/rc and what
// systemd says of the boot beside it.
const runScript = `#!/bin/sh
mkdir -p /job/out
echo "sbx-guest: test starts at $(cut -d' ' -f1 /proc/uptime)"
rc=0
/job/test.sh >/job/out/test.log 2>&1 || rc=$?
systemctl list-units --failed --no-legend >/job/out/failed.txt 2>&1
echo "$rc" >/job/out/rc
echo "sbx-guest: test done at $(cut -d' ' -f1 /proc/uptime), exit $rc"
sync
`

// stage writes, into root (copied over the guest's overlay by /init), the
// files that make the host's root a test guest: its identity, the masks,
// the controllers' drop-ins and the test unit; and job/run.sh.
func stage(root, job string) error {
	id := make([]byte, 16)
	rand.Read(id)
	etc := filepath.Join(root, "etc")
	sys := filepath.Join(etc, "systemd", "system")
	files := map[string]string{
		"machine-id": hex.EncodeToString(id) + "\n",
		"hostname":   "sbx-guest\n",
		"hosts":      "127.0.0.1 localhost\n127.0.1.1 sbx-guest\n",
		"fstab":      "# empty: the guest's root is the overlay its initramfs mounted\n",
		// The root cgroup enables cpu and io for its children only when
		// some unit asks for them; a weight equal to the default asks
		// without changing anything.
		"systemd/system/system.slice.d/controllers.conf": "[Slice]\nCPUWeight=100\nIOWeight=100\n",
		"systemd/system/user.slice.d/controllers.conf":   "[Slice]\nCPUWeight=100\nIOWeight=100\n",
		"systemd/system/claude-sbx-vmtest.service":       testUnit,
	}
	for name, text := range files {
		p := filepath.Join(etc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	links := map[string]string{filepath.Join(sys, "multi-user.target.wants", "claude-sbx-vmtest.service"): "../claude-sbx-vmtest.service"}
	for _, u := range masks("/etc") {
		links[filepath.Join(sys, u)] = "/dev/null"
	}
	// The guest needs no generator: its fstab is empty, it has no getty
	// and no SysV scripts.
	gens, _ := filepath.Glob("/usr/lib/systemd/system-generators/*")
	for _, g := range gens {
		links[filepath.Join(etc, "systemd", "system-generators", filepath.Base(g))] = "/dev/null"
	}
	for l, target := range links {
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, l); err != nil {
			return fmt.Errorf("stage the guest: %w", err)
		}
	}
	return os.WriteFile(filepath.Join(job, "run.sh"), []byte(runScript), 0o755)
}
