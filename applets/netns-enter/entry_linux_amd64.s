#include "textflag.h"

// _netnsenter_rt0 is the ELF entry point of netns-enter (linked with
// -ldflags=-E=_netnsenter_rt0; see entry_linux.go). It runs before Go's
// runtime, on the kernel's initial stack, which it leaves untouched, and
// uses only registers that the system call clobbers or _rt0_amd64_linux
// does not read. BX collects the results of the system calls: 0 when all
// succeeded.
TEXT _netnsenter_rt0(SB),NOSPLIT|NOFRAME,$0
	XORQ	BX, BX

	// entryHandlers[sig] = the disposition (sa_handler) of each signal
	// 1..64: rt_sigaction(sig, NULL, &entryAct, 8) only reads it.
	MOVQ	$1, R12
handlers:
	MOVQ	$13, AX			// SYS_rt_sigaction
	MOVQ	R12, DI
	XORQ	SI, SI
	LEAQ	·entryAct(SB), DX
	MOVQ	$8, R10
	SYSCALL
	ORQ	AX, BX
	MOVQ	·entryAct(SB), R13
	LEAQ	·entryHandlers(SB), R14
	MOVQ	R13, (R14)(R12*8)
	INCQ	R12
	CMPQ	R12, $65
	JLT	handlers

	// entryMask = the signal mask: rt_sigprocmask(0, NULL, &entryMask, 8).
	MOVQ	$14, AX			// SYS_rt_sigprocmask
	XORQ	DI, DI
	XORQ	SI, SI
	LEAQ	·entryMask(SB), DX
	MOVQ	$8, R10
	SYSCALL
	ORQ	AX, BX

	// If the execution made us root (setuid), the runtime starts as the
	// caller: setresuid(-1, ruid, -1). Root stays the saved uid, for
	// enter to take back.
	MOVQ	$102, AX		// SYS_getuid
	SYSCALL
	MOVQ	AX, R12
	MOVQ	$107, AX		// SYS_geteuid
	SYSCALL
	CMPQ	AX, R12
	JEQ	done
	MOVQ	$117, AX		// SYS_setresuid
	MOVQ	$-1, DI
	MOVQ	R12, SI
	MOVQ	$-1, DX
	SYSCALL
	ORQ	AX, BX
	MOVQ	$1, ·entryDropped(SB)
done:
	MOVQ	BX, ·entryErr(SB)
	MOVQ	$1, ·entryRan(SB)
	JMP	_rt0_amd64_linux(SB)
