// Package claudeupdate is the claude-update applet: it fetches the agent
// binary from the official release channel (manifest signed with a pinned
// OpenPGP key, SHA-256 per platform) or from an npm registry (sha512
// integrity), smoke-tests it, and installs it atomically into the bin
// directory (see internal/bindir), with pruning and rollback.
package claudeupdate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/cli"
	"github.com/claude-sandbox/claude-sandbox/internal/download"
	"github.com/claude-sandbox/claude-sandbox/internal/npmreg"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// Applet is the claude-update applet.
var Applet = cli.Applet{Name: "claude-update", Run: run}

// env is what the applet takes from its surroundings. Only tests build one
// other than defaultEnv: in particular the release base, key URL and
// fingerprint pin cannot be changed from the command line or environment.
type env struct {
	getenv      func(string) string
	environ     func() []string
	releaseBase string
	keyURL      string
	fingerprint string
	platform    func() (string, error)
	npmHome     func() string
	npm         bool // run `npm config get registry` as the last resort
	retries     int
	backoff     time.Duration
	idle        time.Duration
	terminal    func(io.Writer) bool
}

func defaultEnv() env {
	return env{
		getenv:      os.Getenv,
		environ:     os.Environ,
		releaseBase: release.Base,
		keyURL:      release.KeyURL,
		fingerprint: release.Fingerprint,
		platform:    func() (string, error) { return release.Platform(runtime.GOARCH, "/bin/sh") },
		npmHome:     npmHome,
		npm:         true,
		terminal:    isTerminal,
	}
}

// npmHome is the home whose .npmrc is read: $HOME, except for root, which
// reads its own (from the password database). Under sudo, HOME can be the
// invoking user's, and what any process of that user writes to ~/.npmrc
// must not decide what root installs.
func npmHome() string {
	if os.Geteuid() == 0 {
		if u, err := user.LookupId("0"); err == nil && u.HomeDir != "" {
			return u.HomeDir
		}
		return "/root"
	}
	return os.Getenv("HOME")
}

func run(ctx context.Context, args []string, stdio cli.Stdio) error {
	return runEnv(ctx, args, stdio, defaultEnv())
}

func runEnv(ctx context.Context, args []string, stdio cli.Stdio, e env) error {
	f, err := parseFlags(args, stdio)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	dirPath := buildinfo.BinDir
	if v := e.getenv("CLAUDE_SBX_BINDIR"); v != "" {
		dirPath = v
	}
	if !filepath.IsAbs(dirPath) {
		return cli.Usagef("CLAUDE_SBX_BINDIR=%s is not an absolute path", dirPath)
	}
	u := &updater{
		f:   f,
		e:   e,
		dir: bindir.New(filepath.Clean(dirPath)),
		out: stdio.Out,
		err: stdio.Err,
	}
	switch {
	case f.List:
		return u.list()
	case f.Rollback:
		return u.rollback(ctx)
	}
	src, err := u.source(ctx)
	if err != nil {
		return err
	}
	if f.Check {
		return u.check(ctx, src)
	}
	return u.update(ctx, src)
}

// updater carries one run.
type updater struct {
	f        *flags
	e        env
	dir      *bindir.Dir
	out, err io.Writer
}

func (u *updater) printf(format string, args ...any) {
	fmt.Fprintf(u.out, format+"\n", args...)
}

// warnf reports something that does not stop the run (a retry) on stderr.
func (u *updater) warnf(format string, args ...any) {
	fmt.Fprintf(u.err, "claude-update: "+format+"\n", args...)
}

func (u *updater) source(ctx context.Context) (source, error) {
	dl, err := download.New(download.Options{
		Getenv:  u.e.getenv,
		Retries: u.e.retries,
		Backoff: u.e.backoff,
		Idle:    u.e.idle,
		Logf:    u.warnf,
	})
	if err != nil {
		return nil, err
	}
	platform, err := u.e.platform()
	if err != nil {
		return nil, err
	}
	if u.f.Source == "npm" {
		var reg, from string
		if u.f.Registry != "" {
			reg, err = npmreg.CheckURL(u.f.Registry)
			from = "--registry"
		} else {
			home := u.e.npmHome()
			c := npmreg.Config{Getenv: u.e.getenv, Home: home}
			if u.e.npm {
				c.Npm = npmreg.NpmConfigGet(home, u.e.environ())
			}
			reg, from, err = npmreg.Registry(ctx, c)
		}
		if err != nil {
			return nil, err
		}
		return &npmSource{u: u, dl: dl, registry: reg, from: from, pkg: npmreg.Package(platform)}, nil
	}
	return &releaseSource{
		u:           u,
		dl:          dl,
		base:        u.e.releaseBase,
		keyURL:      u.e.keyURL,
		fingerprint: u.e.fingerprint,
		platform:    platform,
	}, nil
}

func (u *updater) list() error {
	vs, err := u.dir.Installed()
	if err != nil {
		return err
	}
	cur, _, err := u.dir.Current()
	if err != nil {
		return err
	}
	prev, _, err := u.dir.PreviousVersion()
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		u.printf("no versions installed in %s", u.dir.Path)
		return nil
	}
	for _, v := range vs {
		switch v {
		case cur:
			u.printf("* %s (current)", v)
		case prev:
			u.printf("  %s (previous)", v)
		default:
			u.printf("  %s", v)
		}
	}
	return nil
}

func (u *updater) check(ctx context.Context, src source) error {
	v, err := src.version(ctx, u.f.Target)
	if err != nil {
		return err
	}
	cur, ok, err := u.dir.Current()
	if err != nil {
		return err
	}
	switch {
	case !ok:
		return fmt.Errorf("%s is %s; nothing is installed in %s", u.f.Target, v, u.dir.Path)
	case cur == v:
		u.printf("%s is current (%s)", v, u.f.Target)
		return nil
	case cur.Compare(v) > 0:
		return fmt.Errorf("%s is %s, older than the current %s (upstream rolled back)", u.f.Target, v, cur)
	}
	return fmt.Errorf("%s is %s, newer than the current %s", u.f.Target, v, cur)
}

func (u *updater) lock() error {
	if err := u.dir.Lock(); err != nil {
		return err
	}
	return nil
}

func (u *updater) rollback(ctx context.Context) error {
	if err := u.lock(); err != nil {
		return err
	}
	defer u.dir.Unlock()
	cur, ok, err := u.dir.Current()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("nothing is installed in %s", u.dir.Path)
	}
	prev, ok, err := u.dir.PreviousVersion()
	if err != nil {
		return err
	}
	if !ok || prev == cur {
		return fmt.Errorf("no previous version to roll back to (current: %s)", cur)
	}
	if err := bindir.Smoke(ctx, u.dir.Binary(prev), prev); err != nil {
		return err
	}
	if err := u.dir.Switch(prev); err != nil {
		return err
	}
	u.printf("rolled back to %s (was %s)", prev, cur)
	return nil
}

func (u *updater) update(ctx context.Context, src source) error {
	if err := u.lock(); err != nil {
		return err
	}
	defer u.dir.Unlock()
	v, err := src.version(ctx, u.f.Target)
	if err != nil {
		return err
	}
	cur, haveCur, err := u.dir.Current()
	if err != nil {
		return err
	}
	if haveCur && release.IsChannel(u.f.Target) && v.Compare(cur) < 0 {
		u.printf("upstream rolled back %s to %s (current: %s); following it", u.f.Target, v, cur)
	}
	art, err := src.artifact(ctx, v)
	if err != nil {
		return err
	}
	present := false
	if u.dir.Has(v) && !u.f.Force {
		present = true
		if art.matches != nil {
			ok, err := art.matches(u.dir.Binary(v))
			if err != nil {
				return err
			}
			if !ok {
				u.printf("%s does not match the manifest; downloading it again", u.dir.Binary(v))
				present = false
			}
		}
	}
	if present && haveCur && cur == v {
		u.printf("%s is already installed and current", v)
		return nil
	}
	if present {
		if err := bindir.Smoke(ctx, u.dir.Binary(v), v); err != nil {
			return err
		}
	} else {
		space := func(need int64) error { return u.space(need) }
		fill := func(w io.Writer) error { return art.fetch(ctx, w, space) }
		check := func(ctx context.Context, path string) error { return bindir.Smoke(ctx, path, v) }
		if err := u.dir.Install(ctx, v, fill, check); err != nil {
			return err
		}
	}
	if err := u.dir.Switch(v); err != nil {
		return err
	}
	switch {
	case !haveCur:
		u.printf("installed %s in %s", v, u.dir.Path)
	case cur == v:
		u.printf("reinstalled %s", v)
	default:
		u.printf("installed %s (previous: %s)", v, cur)
	}
	pruned, err := u.dir.Prune(u.f.Keep)
	if err != nil {
		return fmt.Errorf("installed %s, but pruning failed: %w", v, err)
	}
	for _, p := range pruned {
		u.printf("removed %s", p)
	}
	return nil
}

// space checks that need bytes plus a margin (a tenth, and 1 MiB) are free.
func (u *updater) space(need int64) error {
	free, err := u.dir.Free()
	if err != nil {
		return err
	}
	want := need + need/10 + 1<<20
	if free < want {
		return fmt.Errorf("not enough space in %s: need %s, %s free", u.dir.Path, mb(want), mb(free))
	}
	return nil
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
