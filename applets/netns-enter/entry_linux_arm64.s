#include "textflag.h"

// _netnsenter_rt0 is the ELF entry point of netns-enter (linked with
// -ldflags=-E=_netnsenter_rt0; see entry_linux.go). It runs before Go's
// runtime, on the kernel's initial stack, which it leaves untouched, and
// uses only R0-R3 (system call arguments), R8 (its number) and R9-R12,
// which _rt0_arm64_linux does not read. R9 collects the results of the
// system calls: 0 when all succeeded.
TEXT _netnsenter_rt0(SB),NOSPLIT|NOFRAME,$0
	MOVD	$0, R9

	// entryHandlers[sig] = the disposition (sa_handler) of each signal
	// 1..64: rt_sigaction(sig, NULL, &entryAct, 8) only reads it.
	MOVD	$1, R10
handlers:
	MOVD	R10, R0
	MOVD	$0, R1
	MOVD	$·entryAct(SB), R2
	MOVD	$8, R3
	MOVD	$134, R8		// SYS_rt_sigaction
	SVC
	ORR	R0, R9, R9
	MOVD	$·entryAct(SB), R11
	MOVD	(R11), R11
	MOVD	$·entryHandlers(SB), R12
	MOVD	R11, (R12)(R10<<3)
	ADD	$1, R10, R10
	CMP	$65, R10
	BLT	handlers

	// entryMask = the signal mask: rt_sigprocmask(0, NULL, &entryMask, 8).
	MOVD	$0, R0
	MOVD	$0, R1
	MOVD	$·entryMask(SB), R2
	MOVD	$8, R3
	MOVD	$135, R8		// SYS_rt_sigprocmask
	SVC
	ORR	R0, R9, R9

	// If the execution made us root (setuid), the runtime starts as the
	// caller: setresuid(-1, ruid, -1). Root stays the saved uid, for
	// enter to take back.
	MOVD	$174, R8		// SYS_getuid
	SVC
	MOVD	R0, R10
	MOVD	$175, R8		// SYS_geteuid
	SVC
	CMP	R0, R10
	BEQ	done
	MOVD	$-1, R0
	MOVD	R10, R1
	MOVD	$-1, R2
	MOVD	$147, R8		// SYS_setresuid
	SVC
	ORR	R0, R9, R9
	MOVD	$1, R11
	MOVD	$·entryDropped(SB), R12
	MOVD	R11, (R12)
done:
	MOVD	$·entryErr(SB), R12
	MOVD	R9, (R12)
	MOVD	$1, R11
	MOVD	$·entryRan(SB), R12
	MOVD	R11, (R12)
	JMP	_rt0_arm64_linux(SB)
