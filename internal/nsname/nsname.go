// Package nsname checks the names of the project's network namespaces.
//
// A name is used as a file name under /run/netns and /etc/netns, as a line of
// the netns-enter whitelist, and inside interface names ("netns-NAME" must fit
// the kernel's 15-byte IFNAMSIZ-1 limit after netns-setup's prefixing), so the
// accepted set is deliberately small: ^[a-z0-9][a-z0-9_-]{0,14}$.
//
// The package imports the standard library only: it is linked into the setuid
// netns-enter build.
package nsname

import (
	"errors"
	"fmt"
	"strconv"
)

// RunDir holds one nsfs bind mount per persistent namespace, as ip-netns(8)
// and netns-setup make them: RunDir/NAME.
const RunDir = "/run/netns"

// EtcDir holds per-namespace files: EtcDir/NAME/resolv.conf is what the
// sandbox sees as /etc/resolv.conf in namespace NAME.
const EtcDir = "/etc/netns"

// Path returns the bind mount of namespace name under RunDir.
func Path(name string) string { return RunDir + "/" + name }

// ResolvConf returns the resolv.conf that netns-setup writes for name.
func ResolvConf(name string) string { return EtcDir + "/" + name + "/resolv.conf" }

// MaxLen is the longest valid name, in bytes.
const MaxLen = 15

// ErrInvalid is wrapped by every error Check returns.
var ErrInvalid = errors.New("invalid namespace name")

// Valid reports whether name matches ^[a-z0-9][a-z0-9_-]{0,14}$.
func Valid(name string) bool {
	if len(name) == 0 || len(name) > MaxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Check returns nil if name is valid, else an error wrapping ErrInvalid that
// quotes the name (with %q, so control bytes and long names stay on one line)
// and says what is allowed.
func Check(name string) error {
	if Valid(name) {
		return nil
	}
	shown := name
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	return fmt.Errorf("%w %q: use 1 to %d characters of a-z, 0-9, '-' or '_', starting with a letter or digit", ErrInvalid, shown, MaxLen)
}

// ForUser is the namespace a sandbox of user uid runs in: base-UID where
// mine says that one is the user's (the launcher: whitelisted and up; the
// net command: netns-dns lists it as theirs), else base.
func ForUser(base string, uid int, mine func(name string) bool) string {
	if own := base + "-" + strconv.Itoa(uid); Valid(own) && mine(own) {
		return own
	}
	return base
}
