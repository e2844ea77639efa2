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
	"net"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/download"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall/kongparse"
	"github.com/claude-sandbox/claude-sandbox/internal/npmreg"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// Applet is the claude-update applet.
var Applet = multicall.Applet{Name: "claude-update", Run: run}

// env is what the applet takes from its surroundings. Only tests build one
// other than defaultEnv: in particular the release base, key URL and
// fingerprint pin cannot be changed from the command line or environment.
type env struct {
	getenv      func(string) string
	releaseBase string
	keyURL      string
	fingerprint string
	platform    func() (string, error)
	npmHome     func() string
	npmDefault  string // tests: the registry when none is configured
	retries     int
	backoff     time.Duration
	idle        time.Duration
	terminal    func(io.Writer) bool
	euid        func() int
	free        func() (int64, error) // tests: the bin dir's free space
	resolver    *net.Resolver         // tests: the DNS resolver
	conf        string                // the configuration file ("": none)
}

func defaultEnv() env {
	return env{
		getenv:      os.Getenv,
		releaseBase: release.Base,
		keyURL:      release.KeyURL,
		fingerprint: release.Fingerprint,
		platform:    func() (string, error) { return release.Platform(runtime.GOARCH, "/bin/sh") },
		npmHome:     npmHome,
		terminal:    isTerminal,
		euid:        os.Geteuid,
		conf:        filepath.Join(buildinfo.Sysconfdir, confName),
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

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	ctx, stop := withSignals(ctx)
	defer stop()
	err := runEnv(ctx, args, stdio, defaultEnv())
	return interrupted(ctx, err)
}

// errInterrupted is the cancellation cause set by withSignals.
type errInterrupted struct{ sig syscall.Signal }

func (e errInterrupted) Error() string { return "interrupted by " + unix.SignalName(e.sig) }

// withSignals cancels ctx on SIGINT, SIGTERM or SIGHUP (a closed terminal
// or ssh session), so that the run unwinds
// and removes its temporary files instead of dying with them.
func withSignals(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(errInterrupted{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interrupted turns the failure of an interrupted run into 128+signal.
func interrupted(ctx context.Context, err error) error {
	var ie errInterrupted
	if err == nil || !errors.As(context.Cause(ctx), &ie) {
		return err
	}
	// The run's own error is dropped on purpose: it is only the
	// cancellation the signal caused ("context canceled" from wherever the
	// run was), and the signal says more.
	return &multicall.ExitError{Code: 128 + int(ie.sig), Err: fmt.Errorf("%w; temporary files removed, nothing changed", ie)}
}

func runEnv(ctx context.Context, args []string, stdio multicall.Stdio, e env) error {
	f, err := parseFlags(args, stdio)
	if errors.Is(err, kongparse.ErrHelp) {
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
		return multicall.Usagef("CLAUDE_SBX_BINDIR=%s is not an absolute path", dirPath)
	}
	d := bindir.New(filepath.Clean(dirPath))
	d.Trusted = e.euid() == 0
	u := &updater{
		f:   f,
		e:   e,
		dir: d,
		out: stdio.Out,
		err: stdio.Err,
	}
	d.Logf = u.warnf
	// Refuse an unsafe bin dir before anything else, whatever the network
	// or npm configuration would say; --list and --check only read.
	if d.Trusted && !f.List && !f.Check {
		if err := bindir.CheckTrusted(d.Path); err != nil {
			return err
		}
	}
	// Only the modes that fetch read the configuration file: a broken one
	// must not stand in the way of --rollback or --list.
	var c conf
	if !f.List && !f.Hold && !f.Unhold && !f.Rollback {
		if c, err = loadConf(e.conf, u.trust(), u.warnf); err != nil {
			return err
		}
	}
	if err := f.setSource(c); err != nil {
		return err
	}
	switch {
	case f.List:
		return u.list()
	case f.Hold, f.Unhold:
		return u.hold()
	}
	deadline := fmt.Errorf("claude-update did not finish within %v (a stalled or endless download?); nothing changed: try again, or raise --timeout", f.Timeout)
	ctx, cancel := context.WithTimeoutCause(ctx, f.Timeout, deadline)
	defer cancel()
	err = u.modes(ctx)
	if err != nil && context.Cause(ctx) == deadline {
		return deadline
	}
	var nf *download.NotFoundError
	if f.Source == "release" && errors.As(err, &nf) {
		return fmt.Errorf("%w; %s", err, npmHint(e.conf))
	}
	return err
}

// npmHint ends the failure of a run whose release host does not resolve:
// networks that block downloads.claude.ai often reach the npm registry.
// conf is the configuration file that can make npm the default.
func npmHint(conf string) string {
	return "claude-update --source npm installs the same agent from the npm registry (npm's configuration, or --registry URL); " +
		"to make that the default, add the line \"source npm\" to " + quote.String(conf) + " (owned by root, writable by no one else)"
}

func (u *updater) modes(ctx context.Context) error {
	if u.f.Rollback {
		return u.rollback(ctx)
	}
	src, err := u.source(ctx)
	if err != nil {
		return err
	}
	if u.f.Check {
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
	platform, err := u.e.platform()
	if err != nil {
		return nil, err
	}
	opts := download.Options{
		Getenv:   u.e.getenv,
		Retries:  u.e.retries,
		Backoff:  u.e.backoff,
		Idle:     u.e.idle,
		Logf:     u.warnf,
		Trust:    u.trust(),
		Resolver: u.e.resolver,
	}
	if u.f.Source == "npm" {
		return u.npmSource(ctx, opts, platform)
	}
	dl, err := download.New(opts)
	if err != nil {
		return nil, err
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
	u.dir.Tidy()
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
	st, err := u.dir.State()
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		u.printf("no versions installed in %s", u.dir.Path)
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
	if h, ok := st.HoldVersion(); ok {
		u.printf("held at %s: channel runs skip; claude-update --unhold releases it", h)
	}
	return nil
}

// hold sets or releases the hold.
func (u *updater) hold() error {
	if err := u.dir.Lock(); err != nil {
		return err
	}
	defer u.dir.Unlock()
	st, err := u.dir.State()
	if err != nil {
		return err
	}
	if u.f.Unhold {
		h, ok := st.HoldVersion()
		if !ok {
			u.printf("nothing is held")
			return nil
		}
		st.Hold = ""
		if err := u.dir.SaveState(st); err != nil {
			return err
		}
		u.printf("released the hold on %s; channel runs update again", h)
		return nil
	}
	var v release.Version
	if u.f.Target != "" {
		if v, err = release.ParseVersion(u.f.Target); err != nil {
			return err
		}
	} else {
		cur, ok, err := u.dir.Current()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("nothing is installed in %s to hold: name a version (claude-update --hold 2.1.197)", u.dir.Path)
		}
		v = cur
	}
	st.Hold = v.String()
	if err := u.dir.SaveState(st); err != nil {
		return err
	}
	note := ""
	if !u.dir.Has(v) {
		note = fmt.Sprintf(" (not installed: claude-update %s installs it)", v)
	}
	u.printf("held at %s%s: channel runs report and skip until claude-update --unhold", v, note)
	return nil
}

// checkExit is --check's "an update is available" (as dnf check-update).
const checkExit = 100

// survey is what check and update start from: the bin dir's state, the
// version the target names, the current version and whether the target is
// a channel.
type survey struct {
	st      *bindir.State
	v, cur  release.Version
	haveCur bool
	channel bool
}

func (u *updater) survey(ctx context.Context, src source) (survey, error) {
	st, err := u.dir.State()
	if err != nil {
		return survey{}, err
	}
	v, err := src.version(ctx, u.f.Target)
	if err != nil {
		return survey{}, err
	}
	cur, haveCur, err := u.dir.Current()
	if err != nil {
		return survey{}, err
	}
	return survey{st: st, v: v, cur: cur, haveCur: haveCur, channel: release.IsChannel(u.f.Target)}, nil
}

func (u *updater) check(ctx context.Context, src source) error {
	u.dir.Tidy()
	sv, err := u.survey(ctx, src)
	if err != nil {
		return err
	}
	st, v, cur, ok, channel := sv.st, sv.v, sv.cur, sv.haveCur, sv.channel
	h, held := st.HoldVersion()
	switch {
	case channel && held:
		u.printf("held at %s (%s is %s); claude-update --unhold to follow %s", h, u.f.Target, v, u.f.Target)
		return nil
	case !ok:
		u.printf("%s is %s; nothing is installed in %s", u.f.Target, v, u.dir.Path)
		return multicall.Exit(checkExit)
	case cur == v:
		u.printf("%s is current (%s)", v, u.f.Target)
		return nil
	}
	if top := u.highest(st); channel && !u.f.AllowDowngrade && !top.IsZero() && v.Compare(top) < 0 {
		u.printf("%s is %s, lower than %s installed here before: not an update (claude-update refuses it without --allow-downgrade)", u.f.Target, v, top)
		return nil
	}
	if cur.Compare(v) > 0 {
		u.printf("%s is %s, older than the current %s", u.f.Target, v, cur)
	} else {
		u.printf("%s is %s, newer than the current %s", u.f.Target, v, cur)
	}
	return multicall.Exit(checkExit)
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
	st, err := u.dir.State()
	if err != nil {
		return err
	}
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
	rec, ok := st.Record(prev)
	if !ok {
		return fmt.Errorf("%s has no record of being verified: install it again with claude-update %s", u.dir.Binary(prev), prev)
	}
	bin, err := u.dir.Verify(prev, rec)
	if errors.Is(err, bindir.ErrMismatch) {
		return fmt.Errorf("%w: install it again with claude-update %s", err, prev)
	}
	if err != nil {
		return err
	}
	defer bin.Close()
	if err := u.dir.Smoke(ctx, bin, prev); err != nil {
		return err
	}
	if err := u.dir.Switch(st, prev, bin); err != nil {
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
	sv, err := u.survey(ctx, src)
	if err != nil {
		return err
	}
	st, v, cur, haveCur, channel := sv.st, sv.v, sv.cur, sv.haveCur, sv.channel
	if h, ok := st.HoldVersion(); channel && ok {
		u.printf("held at %s (%s is %s); not updating: claude-update --unhold to follow %s again", h, u.f.Target, v, u.f.Target)
		return nil
	}
	top := u.highest(st)
	downgrade := channel && !top.IsZero() && v.Compare(top) < 0 && !(haveCur && cur == v)
	if downgrade && !u.f.AllowDowngrade {
		return fmt.Errorf("%s points to %s, lower than %s installed here before: refusing to downgrade (a rolled-back or replayed channel?); install %s by name or pass --allow-downgrade to follow it", u.f.Target, v, top, v)
	}
	art, err := src.artifact(ctx, v)
	if err != nil {
		return err
	}
	current := haveCur && cur == v
	if channel && !current && !u.f.AllowDowngrade && art.buildDate != "" && st.BuildDate != "" && olderDate(art.buildDate, st.BuildDate) {
		return fmt.Errorf("%s points to %s, whose signed manifest was built %s, before %s of a version installed here: refusing to downgrade; install %s by name or pass --allow-downgrade to follow it", u.f.Target, v, art.buildDate, st.BuildDate, v)
	}
	if downgrade {
		u.printf("%s points to %s, lower than %s installed here before; following it (--allow-downgrade)", u.f.Target, v, top)
	}
	var bin *os.File
	if u.dir.Has(v) && !u.f.Force {
		if bin, err = u.present(v, st, art); err != nil {
			return err
		}
	}
	if bin != nil {
		defer bin.Close()
		if haveCur && cur == v {
			if err := u.record(st, v, art); err != nil {
				return err
			}
			u.printf("%s is already installed and current", v)
			return nil
		}
		if err := u.dir.Smoke(ctx, bin, v); err != nil {
			return err
		}
	} else {
		space := func(need int64) error { return u.space(need) }
		fill := func(w io.Writer) error { return art.fetch(ctx, w, space) }
		check := func(ctx context.Context, f *os.File) error { return u.dir.Smoke(ctx, f, v) }
		f, sum, size, err := u.dir.Install(ctx, v, fill, check)
		if err != nil {
			return err
		}
		bin = f
		defer bin.Close()
		st.Versions[v.String()] = bindir.Record{SHA256: sum, Size: size, Source: art.source}
	}
	if err := u.record(st, v, art); err != nil {
		return err
	}
	if err := u.dir.Switch(st, v, bin); err != nil {
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
	if h, ok := st.HoldVersion(); ok && h != v {
		u.printf("note: held at %s; channel runs skip until claude-update --unhold", h)
	}
	pruned, err := u.dir.Prune(u.f.Keep)
	if err == nil {
		err = u.dir.SaveState(st)
	}
	if err != nil {
		return fmt.Errorf("installed %s, but pruning failed: %w", v, err)
	}
	for _, p := range pruned {
		u.printf("removed %s", p)
	}
	return nil
}

// highest is the highest version installed here: as recorded, or, before
// there is a record (installs by older claude-updates), the highest file
// present, which only whoever may write the bin dir can have put there.
func (u *updater) highest(st *bindir.State) release.Version {
	if top := st.HighestVersion(); !top.IsZero() {
		return top
	}
	if vs, err := u.dir.Installed(); err == nil && len(vs) > 0 {
		return vs[0]
	}
	return release.Version{}
}

// present returns claude.<v>, open, if it is verified: it matches its
// record, or (without one) the signed manifest's SHA-256. Otherwise it says
// why and returns nil, and the version is downloaded again.
func (u *updater) present(v release.Version, st *bindir.State, art *artifact) (*os.File, error) {
	if rec, ok := st.Record(v); ok {
		f, err := u.dir.Verify(v, rec)
		if errors.Is(err, bindir.ErrMismatch) {
			u.printf("%v; downloading it again", err)
			return nil, nil
		}
		return f, err
	}
	if art.sha256 == "" {
		u.printf("%s has no record of being verified; downloading it again", u.dir.Binary(v))
		return nil, nil
	}
	f, sum, size, err := u.dir.OpenHashed(v)
	if err != nil {
		return nil, err
	}
	if sum != art.sha256 || size != art.size {
		f.Close()
		u.printf("%s does not match the manifest; downloading it again", u.dir.Binary(v))
		return nil, nil
	}
	st.Versions[v.String()] = bindir.Record{SHA256: sum, Size: size, Source: art.source}
	return f, nil
}

// record notes v as installed and verified (its record is in st already),
// raises the highest version and the signed build date, and saves the
// state.
func (u *updater) record(st *bindir.State, v release.Version, art *artifact) error {
	st.Raise(v)
	if art.buildDate != "" && (st.BuildDate == "" || olderDate(st.BuildDate, art.buildDate)) {
		st.BuildDate = art.buildDate
	}
	return u.dir.SaveState(st)
}

// olderDate reports whether RFC 3339 date a is before b; dates that do not
// parse compare as not older.
func olderDate(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339, a)
	tb, err2 := time.Parse(time.RFC3339, b)
	return err1 == nil && err2 == nil && ta.Before(tb)
}

// space checks that need bytes plus a margin (a tenth, and 1 MiB) are free.
func (u *updater) space(need int64) error {
	free, err := u.dir.Free()
	if u.e.free != nil {
		free, err = u.e.free()
	}
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

// trust is what vets a file before root reads it as configuration:
// bindir.CheckTrustedFile as root, nothing otherwise (a user's own files
// configure a user's run).
func (u *updater) trust() func(what, path string) error {
	if u.e.euid() != 0 {
		return nil
	}
	return bindir.CheckTrustedFile
}

func (u *updater) npmSource(ctx context.Context, opts download.Options, platform string) (source, error) {
	c := npmreg.Config{Getenv: u.e.getenv, Home: u.e.npmHome(), Default: u.e.npmDefault, Trust: u.trust(), Logf: u.warnf}
	set, err := npmreg.Load(c, u.f.Registry)
	if err != nil {
		return nil, err
	}
	opts.RootCAs = set.RootCAs
	opts.Insecure = set.Insecure
	opts.Proxy = set.ProxyFunc()
	opts.Authorization = set.Authorization
	if set.Insecure {
		u.warnf("strict-ssl=false from %s: the registry's certificate is not checked, so neither is the integrity hash it serves", set.InsecureFrom)
	}
	dl, err := download.New(opts)
	if err != nil {
		return nil, err
	}
	return &npmSource{u: u, dl: dl, registry: set.Registry, from: set.From, pkg: npmreg.Package(platform), pks: map[string]*npmreg.Packument{}}, nil
}
