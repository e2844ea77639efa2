#!/bin/busybox sh
# initramfs /init: the host root (9p, read-only) + a tmpfs overlay -> systemd as PID 1
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
log() { echo "vminit: $*" > /dev/console; }
fail() { log "FATAL: $*"; sleep 1; poweroff -f; }

VMROOT=9p; SHELL_ONLY=0; FAST=0; VMMODS=
for a in $(cat /proc/cmdline); do
  case "$a" in
    vmroot=*) VMROOT=${a#vmroot=} ;;
    vmmods=*) VMMODS=${a#vmmods=} ;;
    vmshell=1) SHELL_ONLY=1 ;;
    vmfast=1) FAST=1 ;;
  esac
done
log "uptime $(cut -d' ' -f1 /proc/uptime) loading modules"
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci \
         netfs fscache 9pnet 9pnet_virtio 9p overlay; do
  insmod /mod/$m.ko || log "insmod $m failed"
done

case "$VMROOT" in
  9p) mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /lower \
        || fail "mount 9p hostroot" ;;
  *) fail "unknown vmroot=$VMROOT" ;;
esac
mount -t tmpfs -o mode=755,size=60% vmrw /rw || fail "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work vmroot /newroot \
  || fail "overlay"
N=/newroot
mkdir -p $N/job
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 job $N/job || fail "mount 9p job"
log "uptime $(cut -d' ' -f1 /proc/uptime) root mounted ($VMROOT), preparing overlay"
# the product, installed DESTDIR-style on the host into the job directory
[ -d $N/job/root ] && cp -a $N/job/root/. $N/

# --- identity ---
head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n' > $N/etc/machine-id; echo >> $N/etc/machine-id
echo cgvm > $N/etc/hostname
printf '127.0.0.1 localhost\n127.0.1.1 cgvm\n' > $N/etc/hosts
echo '# empty: root is an overlay set up by the initramfs' > $N/etc/fstab
# the host's kernel has no modules dir; show the guest the unpacked Debian tree (vmmods=HOSTPATH)
if [ -n "$VMMODS" ] && [ -d "/lower$VMMODS" ]; then
  mkdir -p $N/usr/lib/modules && mount --bind "/lower$VMMODS" $N/usr/lib/modules
fi
# the host root has /.dockerenv: systemd would think it runs in a docker container
rm -f $N/.dockerenv $N/run/.containerenv
# a fresh /tmp: else systemd-tmpfiles' 'D /tmp' deletes (whiteouts) all of the host's /tmp, ~15 s
mount -t tmpfs -o mode=1777,size=50% vmtmp $N/tmp

# --- mask what only slows boot or makes no sense in the guest ---
S=$N/etc/systemd/system
rm -rf $S/getty.target.wants $S/timers.target.wants $S/multi-user.target.wants/postgresql.service \
       $S/multi-user.target.wants/e2scrub_reap.service $S/sysinit.target.wants/systemd-timesyncd.service \
       $S/sysinit.target.wants/systemd-pstore.service
for u in getty@tty1.service serial-getty@ttyS0.service getty.target console-getty.service \
         apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer \
         man-db.timer systemd-tmpfiles-clean.timer postgresql.service e2scrub_reap.service \
         systemd-timesyncd.service systemd-pstore.service systemd-networkd-wait-online.service \
         networking.service ssh.service cron.service rsyslog.service \
         systemd-firstboot.service systemd-random-seed.service systemd-hwdb-update.service \
         ldconfig.service systemd-journal-catalog-update.service systemd-update-done.service \
         sys-kernel-debug.mount sys-kernel-tracing.mount dev-hugepages.mount dev-mqueue.mount \
         sys-fs-fuse-connections.mount sys-kernel-config.mount \
         systemd-binfmt.service proc-sys-fs-binfmt_misc.automount remote-fs.target \
         machines.target $MASK_EXTRA; do
  ln -sf /dev/null $S/$u
done

# vmfast=1: also skip generators and early units a throwaway test guest does not need
if [ "$FAST" = 1 ]; then
  mkdir -p $N/etc/systemd/system-generators
  for g in postgresql-generator systemd-cryptsetup-generator systemd-gpt-auto-generator \
           systemd-hibernate-resume-generator systemd-integritysetup-generator systemd-veritysetup-generator \
           systemd-rc-local-generator systemd-sysv-generator systemd-system-update-generator \
           systemd-getty-generator systemd-fstab-generator; do
    ln -sf /dev/null $N/etc/systemd/system-generators/$g
  done
  for u in modprobe@.service systemd-modules-load.service systemd-journal-flush.service \
           systemd-sysusers.service systemd-update-utmp.service systemd-update-utmp-runlevel.service \
           systemd-remount-fs.service systemd-sysctl.service systemd-tmpfiles-setup-dev.service; do
    ln -sf /dev/null $S/$u
  done
fi

# The cpu (and io) controllers are enabled in the root cgroup only when some unit needs them;
# cgroups made outside systemd directly below /sys/fs/cgroup (an nspawn harness) would get
# only memory+pids. A weight equal to the default enables them without changing anything.
mkdir -p $S/system.slice.d $S/user.slice.d
printf '[Slice]\nCPUWeight=100\nIOWeight=100\n' > $S/system.slice.d/vm-controllers.conf
cp $S/system.slice.d/vm-controllers.conf $S/user.slice.d/vm-controllers.conf

# --- the test unit ---
mkdir -p $N/etc/vmtest
cat > $N/etc/vmtest/runner.sh <<'EOF'
#!/bin/bash
up() { cut -d' ' -f1 /proc/uptime; }
echo "VMTEST-START guest-uptime=$(up)"
mkdir -p /job/out
rc=0
if [ -x /job/test.sh ]; then
  timeout "${VMTEST_TIMEOUT:-400}" /job/test.sh > /job/out/test.log 2>&1 || rc=$?
else
  echo "no /job/test.sh"; rc=127
fi
echo "VMTEST-DONE rc=$rc guest-uptime=$(up)"
{
systemctl is-system-running --wait > /job/out/system-state.txt 2>&1
systemd-analyze > /job/out/analyze.txt 2>&1
# 'systemd-analyze blame' takes ~20 s under TCG: only on request
[ -e /job/want-blame ] && systemd-analyze blame 2>/dev/null | head -25 >> /job/out/analyze.txt
systemctl list-units --failed --no-legend > /job/out/failed.txt 2>&1
} 2>&1
echo "$rc" > /job/out/rc
echo "VMTEST-END rc=$rc guest-uptime=$(up)"
sync
# --force: skip the orderly stop of every unit (saves ~2 s under TCG); processes are
# still killed and file systems unmounted
systemctl poweroff --force
EOF
chmod 755 $N/etc/vmtest/runner.sh
cat > $S/vmtest.service <<'EOF'
[Unit]
Description=VM test runner (/job/test.sh)
After=multi-user.target dbus.service systemd-logind.service systemd-user-sessions.service
Wants=dbus.service systemd-logind.service
[Service]
Type=exec
ExecStart=/etc/vmtest/runner.sh
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
EOF
mkdir -p $S/multi-user.target.wants
ln -sf ../vmtest.service $S/multi-user.target.wants/vmtest.service

[ "$SHELL_ONLY" = 1 ] && { log "vmshell=1: dropping to shell"; exec sh; }

log "uptime $(cut -d' ' -f1 /proc/uptime) switch_root -> systemd"
mount --move /dev $N/dev
mount --move /proc $N/proc
mount --move /sys $N/sys
exec switch_root $N /lib/systemd/systemd
