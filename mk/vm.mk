# Tests in a guest with a real kernel (tests/vm, internal/testutil/vm,
# docs/development.md): Debian's kernel under qemu, systemd as PID 1 on
# cgroup v2. Root only; needs qemu-system-x86, xz-utils and apt.

.PHONY: e2e-vm
E2E += e2e-vm

e2e-vm:
	CLAUDE_SBX_E2E=vm $(GO) test -run TestVM $(TESTFLAGS) ./tests/vm/
