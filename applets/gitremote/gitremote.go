// Package gitremote is git-remote-sbx, the git remote helper inside the
// sandbox for a remote whose URL is sbx::NAME (`git push` lines in
// ~/.claude-sandbox-init). It offers git only the connect capability and
// only for git-receive-pack: it names the remote on one line to the
// launcher's socket, then carries git's push protocol (the refs to update
// and a pack of objects) both ways. The launcher receives it into a
// repository of its own, checks it and pushes with the user's git.
package gitremote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// Applet is git-remote-sbx.
var Applet = multicall.Applet{Name: sandbox.PushHelper, Run: run}

// socket is where the launcher listens, inside.
var socket = filepath.Join(sandbox.InsidePushDir, sandbox.PushSocket)

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	if len(args) != 2 {
		return multicall.Usagef("usage: %s REMOTE URL (git runs it for a remote of URL sbx::NAME)", sandbox.PushHelper)
	}
	remote := args[1]
	in := bufio.NewReader(stdio.In)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch cmd := strings.TrimSuffix(line, "\n"); cmd {
		case "":
			return nil
		case "capabilities":
			if _, err := io.WriteString(stdio.Out, "connect\n\n"); err != nil {
				return err
			}
		case "connect git-receive-pack":
			return connect(remote, in, stdio.Out)
		case "connect git-upload-pack":
			return fmt.Errorf("%s: the sandbox only pushes to it (through the launcher); fetch on the host", remote)
		default:
			return fmt.Errorf("unknown command from git: %q", cmd)
		}
	}
}

// connect names the remote to the launcher and carries the protocol.
func connect(remote string, in io.Reader, out io.Writer) error {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return fmt.Errorf("%s: the launcher does not answer (%v): pushes work only while the session that has `git push %s` runs", remote, err, remote)
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "push %s\n", remote); err != nil {
		return err
	}
	if _, err := io.WriteString(out, "\n"); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, in)
		conn.CloseWrite()
		done <- err
	}()
	_, err = io.Copy(out, conn)
	return err
}
