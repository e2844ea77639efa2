package multicall

// Exit codes of the privileged applet's (netns-enter's) refusals: the
// contract between netns-enter and the programs that run it, which switch
// on them and never on its messages (the doctor does). They are netns-enter's
// own, made before it executes the command; once it has, the exit status is
// the command's. Other failures are ExitFailure, bad arguments ExitUsage.
const (
	// ExitNotListed: the namespace is not in the whitelist.
	ExitNotListed = 3
	// ExitNotMember: the whitelist admits only the members of a group
	// (NAME @GROUP) and the caller is not one.
	ExitNotMember = 4
	// ExitNotActive: the caller is admitted, but the namespace is not
	// active (/run/netns/NAME is missing, or is not a namespace).
	ExitNotActive = 5
	// ExitNoWhitelist: the whitelist does not exist.
	ExitNoWhitelist = 6
	// ExitNotSetuid: netns-enter is not setuid root (or runs under a
	// tracer, or from a nosuid mount: the kernel ignored the bit).
	ExitNotSetuid = 7
	// ExitNoNewPrivs: no_new_privs is set (inside a sandbox), so the
	// kernel ignored setuid.
	ExitNoNewPrivs = 8
)

// Refusal returns err as an error that exits with code, one of the Exit
// codes above.
func Refusal(code int, err error) error {
	return &ExitError{Code: code, Err: err}
}
