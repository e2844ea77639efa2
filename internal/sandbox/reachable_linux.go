package sandbox

import "golang.org/x/sys/unix"

// Reachable connects to the unix stream socket and hangs up: a stale socket
// file left by a manager that exited does not count. It is the Reachable of
// the launcher's and the doctor's real hosts.
func Reachable(socket string) bool {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: socket}) == nil
}
