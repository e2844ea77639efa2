// Package quote makes names from outside safe to print on a terminal or in a
// log: paths the sandbox chose, submodule names, server-supplied strings.
//
// A name that is printable UTF-8 is returned as it is, so that ordinary
// messages read as before; any other name (control bytes, escape sequences,
// C1 controls, bidirectional overrides, invalid UTF-8) is returned quoted with
// Go escapes, so that it can neither forge a line nor drive the terminal.
//
// It imports the standard library only: the setuid netns-enter build may use it.
package quote

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// String returns s as it is when every rune is safe to print, otherwise s
// quoted with Go escapes (strconv.Quote, which escapes every non-printable
// rune and every invalid byte).
func String(s string) string {
	if Safe(s) {
		return s
	}
	return strconv.Quote(s)
}

// Safe reports whether s is valid UTF-8 of printable runes, with no
// formatting runes (bidirectional overrides, zero-width joiners) that change
// how the surrounding text reads.
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		if !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
		i += n
	}
	return true
}
