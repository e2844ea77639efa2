// Package toolchain finds the user's compilers and package managers for the
// sandbox: from the directories of the launcher's PATH it works out the
// toolchain each belongs to (Go at /usr/local/go, rustup's ~/.cargo and
// ~/.rustup, nvm's node, pyenv, ...) and the host directories that make it
// work, to be bound read-only at the same paths, never showing a credential
// file or anything the sandbox can write.
//
// Plan is pure: it looks at the host through a Host and returns a plan; the
// launcher binds the roots through its fd binder, which checks each path
// again on an open fd.
package toolchain

import (
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/linkwalk"
)

// Host is what Plan may ask about the machine.
type Host interface {
	Lstat(path string) (fs.FileInfo, error)
	Stat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
	ReadDir(path string) ([]fs.DirEntry, error)
}

// Input is what Plan works from.
type Input struct {
	// Home is the user's real home directory.
	Home string
	// Dirs are the directories to look at, in order: the launcher's PATH
	// (toolchains auto), or those the config names.
	Dirs []string
	// Visible reports whether a host path is already visible inside at
	// the same path (the system directories).
	Visible func(path string) bool
	// Writable are the host paths the sandbox can write (its home, its
	// /tmp, the project, rw binds). A directory in one is visible anyway;
	// a root that lies in one or holds one is not bound.
	Writable []string
}

// Toolchain is one toolchain found.
type Toolchain struct {
	// Name says what it is ("go", "rustup", "nvm node v20.11.0", ...).
	Name string
	// Roots are host paths bound read-only at the same paths.
	Roots []string
	// Why says which directory of PATH (or of the config) brought it.
	Why string
}

// Skip is a directory or root that is not bound, and why.
type Skip struct {
	Path string
	Why  string
}

// Plan is the result.
type Plan struct {
	Toolchains []Toolchain
	// Path is the inside PATH from Dirs: the directories that are
	// visible inside once the roots are bound, in the host's order.
	Path []string
	// Skipped are the directories and roots left out, with the reason.
	Skipped []Skip
	// Masks are credential files inside the roots (a toolchain's own
	// global npmrc, a version's pip.conf): hidden where they are.
	Masks []string
}

// maxLinks bounds the symbolic links followed out of one directory of PATH
// (a bin directory of links into toolchains, such as /usr/local/bin).
const maxLinks = 256

// Make works out the plan.
func Make(h Host, in Input) Plan {
	b := &builder{h: h, in: in, bound: map[string]bool{}}
	for _, d := range in.Dirs {
		b.dir(d)
	}
	return b.plan
}

type builder struct {
	h     Host
	in    Input
	plan  Plan
	bound map[string]bool // roots already in the plan
	seen  map[string]bool
	// dirs are the directories read so far, read once per plan (a root's
	// credential files and its links look at the same ones).
	dirs map[string]dirRead
	// secrets is secretPaths(in.Home), made once.
	secrets []string
}

type dirRead struct {
	ents []fs.DirEntry
	err  error
}

// readDir reads the directory d once per plan.
func (b *builder) readDir(d string) ([]fs.DirEntry, error) {
	if r, ok := b.dirs[d]; ok {
		return r.ents, r.err
	}
	ents, err := b.h.ReadDir(d)
	if b.dirs == nil {
		b.dirs = map[string]dirRead{}
	}
	b.dirs[d] = dirRead{ents, err}
	return ents, err
}

func (b *builder) skip(path, why string) {
	b.plan.Skipped = append(b.plan.Skipped, Skip{path, why})
}

// dir handles one directory of PATH.
func (b *builder) dir(d string) {
	if !filepath.IsAbs(d) {
		b.skip(d, "not an absolute directory")
		return
	}
	d = filepath.Clean(d)
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	if b.seen[d] {
		return
	}
	b.seen[d] = true
	if w := b.writableAt(d); w != "" {
		// Visible anyway (the sandbox writes there); nothing to bind.
		b.plan.Path = append(b.plan.Path, d)
		return
	}
	if b.in.Visible(d) || b.covered(d) {
		// The system's directories are not scanned for links into a
		// toolchain (hundreds of alternatives in /usr/bin lead nowhere
		// else); a toolchain's own were scanned when it was added.
		b.plan.Path = append(b.plan.Path, d)
		return
	}
	real, hops, err := Resolve(b.h, d)
	if err != nil {
		b.skip(d, "does not exist")
		return
	}
	if why := HopRisk(b.in.Home, b.in.Writable, hops); why != "" {
		b.skip(d, why)
		return
	}
	if fi, err := b.h.Stat(real); err != nil || !fi.IsDir() {
		b.skip(d, "not a directory")
		return
	}
	if real != d {
		// A link in PATH: the link's own directory must be visible for
		// the name to work inside, else use the target.
		if !b.in.Visible(filepath.Dir(d)) && !b.covered(filepath.Dir(d)) {
			if b.add(real, d) {
				b.plan.Path = append(b.plan.Path, real)
				b.links(real)
			}
			return
		}
	}
	if b.add(real, d) {
		b.plan.Path = append(b.plan.Path, d)
		b.links(real)
	}
}

// links follows the symbolic links of a bin directory to the toolchains
// they lead into (/usr/local/bin/node -> ~/.nvm/versions/node/v20/bin/node).
func (b *builder) links(dir string) {
	ents, err := b.readDir(dir)
	if err != nil {
		return
	}
	n := 0
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if n++; n > maxLinks {
			return
		}
		p := filepath.Join(dir, e.Name())
		// A link within the directory, or to a place shown already,
		// brings nothing: known without resolving it.
		t, err := b.h.Readlink(p)
		if err != nil || !strings.Contains(t, "/") {
			continue
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		if td := filepath.Dir(t); b.in.Visible(td) || b.covered(td) {
			continue
		}
		real, hops, err := Resolve(b.h, p)
		if err != nil || HopRisk(b.in.Home, b.in.Writable, hops) != "" {
			continue
		}
		td := filepath.Dir(real)
		if b.in.Visible(td) || b.covered(td) || b.writableAt(td) != "" {
			continue
		}
		// Only into a toolchain of a known layout: a link to anywhere
		// else (a project's build output) shows nothing more.
		if _, _, known := layout(b.in.Home, td); known {
			b.add(td, p)
		}
	}
}

// Resolve returns the real path of p and the symbolic links met on the way
// (each by the path it was found at): the plan must see every hop, as the
// fd binder does.
func Resolve(h Host, p string) (real string, hops []string, err error) {
	if !filepath.IsAbs(p) {
		return "", nil, fs.ErrInvalid
	}
	real, err = linkwalk.Walk(h, p, func(link string) error {
		hops = append(hops, link)
		return nil
	})
	return real, hops, err
}

// HopRisk says why a path reached through the links hops must not be
// followed, or "": a link in something the sandbox can write, or in a
// directory of the home that is not a dot-directory (an earlier sandbox may
// have had it as its project), the fd binder's own rule.
func HopRisk(home string, writable, hops []string) string {
	for _, hop := range hops {
		dir := filepath.Dir(hop)
		for _, w := range writable {
			if dir == w || under(dir, w) {
				return "is reached through the symlink " + hop + " in " + w + ", which the sandbox can write"
			}
		}
		if rel, ok := relTo(dir, home); ok && !strings.HasPrefix(rel, ".") {
			top, _, _ := strings.Cut(rel, "/")
			return "is reached through the symlink " + hop + " in " + filepath.Join(home, top) + ", which an earlier sandbox may have written as its project"
		}
	}
	return ""
}

// covered reports whether p lies in a root already bound.
func (b *builder) covered(p string) bool {
	for r := range b.bound {
		if p == r || under(p, r) {
			return true
		}
	}
	return false
}

// add binds the toolchain of the real directory dir, found through why.
func (b *builder) add(dir, why string) bool {
	name, roots := Layout(b.in.Home, dir)
	var ok []string
	for _, r := range roots {
		if b.bound[r] {
			ok = append(ok, r)
			continue
		}
		if _, err := b.h.Lstat(r); err != nil {
			continue // an optional part of the layout
		}
		if r == b.in.Home || under(b.in.Home, r) {
			b.skip(r, "is or holds the home directory")
			continue
		}
		if w := b.writableAt(r); w != "" {
			b.skip(r, "lies in "+w+", which the sandbox can write")
			continue
		}
		if w := b.holdsWritable(r); w != "" {
			b.skip(r, "holds "+w+", which the sandbox can write")
			continue
		}
		if c := Secret(b.in.Home, r); c != "" {
			b.skip(r, "is or holds "+c+", where credentials are kept")
			continue
		}
		if c := b.holdsSecret(r); c != "" {
			b.skip(r, "holds "+c+", where credentials are kept")
			continue
		}
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		return false
	}
	fresh := false
	for _, r := range ok {
		if !b.bound[r] {
			b.bound[r] = true
			fresh = true
		}
	}
	if fresh {
		b.plan.Toolchains = append(b.plan.Toolchains, Toolchain{Name: name, Roots: ok, Why: why})
		for _, r := range ok {
			b.plan.Masks = append(b.plan.Masks, b.secretFiles(r)...)
		}
	}
	return b.covered(dir)
}

// writableAt returns the writable path that p is or lies in, or "".
func (b *builder) writableAt(p string) string {
	for _, w := range b.in.Writable {
		if p == w || under(p, w) {
			return w
		}
	}
	return ""
}

// holdsWritable returns a writable path strictly below p, or "".
func (b *builder) holdsWritable(p string) string {
	for _, w := range b.in.Writable {
		if under(w, p) {
			return w
		}
	}
	return ""
}

// secretNames are the names under which tools keep credentials in an
// install prefix or a version directory.
var secretNames = map[string]bool{
	"npmrc": true, ".npmrc": true, ".yarnrc": true, ".yarnrc.yml": true,
	"pip.conf": true, "pip.ini": true, ".pypirc": true, ".netrc": true,
	".git-credentials": true, "credentials": true, "credentials.toml": true,
	"auth.json": true, ".pgpass": true, ".vault-token": true,
}

// versionDirs hold one installed version per entry.
var versionDirs = map[string]bool{"versions": true, "candidates": true, "toolchains": true, "installs": true}

// maxVersions bounds the entries of a version directory looked at.
const maxVersions = 256

// secretFiles returns the credential files of a root: at its top and in
// its etc/, and the same in each entry of a directory of versions
// (pyenv's versions/3.12/pip.conf, nvm's etc/npmrc).
func (b *builder) secretFiles(root string) []string {
	var out []string
	look := func(dir string, ents []fs.DirEntry) {
		for _, e := range ents {
			if secretNames[e.Name()] && e.Type()&fs.ModeType == 0 {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	inPrefix := func(dir string, ents []fs.DirEntry) {
		look(dir, ents)
		// Only a prefix with an etc (a directory or a link to one)
		// has credentials in it.
		for _, e := range ents {
			if e.Name() == "etc" && (e.IsDir() || e.Type()&fs.ModeSymlink != 0) {
				etc := filepath.Join(dir, "etc")
				es, _ := b.readDir(etc)
				look(etc, es)
				break
			}
		}
	}
	ents, _ := b.readDir(root)
	inPrefix(root, ents)
	for _, e := range ents {
		if !e.IsDir() || !versionDirs[e.Name()] {
			continue
		}
		vs, _ := b.readDir(filepath.Join(root, e.Name()))
		for i, v := range vs {
			if i == maxVersions {
				break
			}
			if v.IsDir() {
				vd := filepath.Join(root, e.Name(), v.Name())
				es, _ := b.readDir(vd)
				inPrefix(vd, es)
			}
		}
	}
	return out
}

// holdsSecret returns a credential path below root that exists.
func (b *builder) holdsSecret(root string) string {
	if b.secrets == nil {
		b.secrets = secretPaths(b.in.Home)
	}
	for _, c := range b.secrets {
		if !under(c, root) {
			continue
		}
		if _, err := b.h.Lstat(c); err == nil {
			return c
		}
	}
	return ""
}

// Layout returns the toolchain a real directory of PATH belongs to and the
// host paths that make it work. Unknown directories are their own root.
func Layout(home, dir string) (name string, roots []string) {
	name, roots, _ = layout(home, dir)
	return name, roots
}

func layout(home, dir string) (name string, roots []string, known bool) {
	name, roots = knownLayout(home, dir)
	if roots != nil {
		return name, roots, true
	}
	if rel, ok := relTo(dir, home); ok {
		return "~/" + rel, []string{dir}, false
	}
	return dir, []string{dir}, false
}

func knownLayout(home, dir string) (name string, roots []string) {
	h := func(rel ...string) string { return filepath.Join(append([]string{home}, rel...)...) }
	rel, inHome := relTo(dir, home)
	switch {
	case dir == "/usr/local/bin" || dir == "/usr/local/sbin":
		return "/usr/local", []string{"/usr/local/bin", "/usr/local/sbin", "/usr/local/lib", "/usr/local/lib64", "/usr/local/libexec", "/usr/local/share", "/usr/local/include"}
	case strings.HasPrefix(dir, "/usr/local/") && strings.HasSuffix(dir, "/bin"):
		top := firstN(dir, 3) // /usr/local/go
		return filepath.Base(top), []string{top}
	case strings.HasPrefix(dir, "/opt/") && strings.Count(dir, "/") >= 3:
		top := firstN(dir, 2) // /opt/NAME
		return filepath.Base(top), []string{top}
	case !inHome:
		return "", nil
	case rel == ".local/bin":
		return "~/.local", []string{h(".local/bin"), h(".local/lib")}
	case rel == "go/bin":
		return "go install", []string{h("go/bin")}
	case rel == ".cargo/bin":
		return "rustup", []string{h(".cargo/bin"), h(".rustup/toolchains"), h(".rustup/settings.toml")}
	case strings.HasPrefix(rel, ".nvm/versions/node/"):
		v := firstN(rel, 4)
		return "nvm node " + filepath.Base(v), []string{h(v)}
	case strings.HasPrefix(rel, ".pyenv/"):
		return "pyenv", []string{h(".pyenv")}
	case strings.HasPrefix(rel, ".volta/"):
		return "volta", []string{h(".volta")}
	case strings.HasPrefix(rel, ".asdf/"):
		return "asdf", []string{h(".asdf"), h(".tool-versions")}
	case strings.HasPrefix(rel, ".local/share/mise/"):
		return "mise", []string{h(".local/share/mise")}
	case strings.HasPrefix(rel, ".sdkman/candidates/"):
		return "sdkman", []string{h(".sdkman/candidates")}
	case strings.HasPrefix(rel, ".local/pipx/venvs/"):
		v := firstN(rel, 4)
		return "pipx " + filepath.Base(v), []string{h(v)}
	case strings.HasPrefix(rel, ".local/share/pipx/venvs/"):
		v := firstN(rel, 5)
		return "pipx " + filepath.Base(v), []string{h(v)}
	}
	return "", nil
}

// homeSecrets are the credential files and directories in a home, relative
// to it, never shown inside by a toolchain (the one list; tested).
var homeSecrets = []string{
	".ssh", ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc",
	".docker", ".aws", ".azure", ".kube", ".config/gh", ".config/hub", ".config/gcloud",
	".config/git/credentials", ".config/op", ".password-store", ".local/share/keyrings",
	".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".m2/settings.xml",
	".m2/settings-security.xml", ".gradle/gradle.properties", ".terraform.d/credentials.tfrc.json",
	".vault-token", ".pgpass", ".my.cnf", ".config/pip", ".pip", ".pip/pip.conf",
	".config/containers/auth.json", ".claude", ".claude.json", ".claude-sandbox-init",
}

// systemSecrets are absolute paths never shown by a toolchain.
var systemSecrets = []string{"/usr/local/etc", "/etc/npmrc", "/etc/pip.conf"}

func secretPaths(home string) []string {
	var out []string
	for _, s := range homeSecrets {
		out = append(out, filepath.Join(home, s))
	}
	return append(out, systemSecrets...)
}

// Secret returns the credential path that p is, or lies in, or "" if none.
// Directories that merely hold one are found by Plan on the host.
func Secret(home, p string) string {
	if home == "/" || home != filepath.Clean(home) {
		for _, c := range secretPaths(home) {
			if p == c || under(p, c) {
				return c
			}
		}
		return ""
	}
	// The same test as above without building the list: it runs for
	// every root and settings file of every start.
	if rel, ok := relTo(p, home); ok {
		for _, s := range homeSecrets {
			if strings.HasPrefix(rel, s) && (len(rel) == len(s) || rel[len(s)] == '/') {
				return filepath.Join(home, s)
			}
		}
	}
	for _, c := range systemSecrets {
		if p == c || under(p, c) {
			return c
		}
	}
	return ""
}

// SecretList returns the credential paths for home, sorted, for the docs
// and the dry run.
func SecretList(home string) []string {
	out := secretPaths(home)
	sort.Strings(out)
	return out
}

// firstN returns the first n components of an absolute or relative path.
func firstN(p string, n int) string {
	abs := strings.HasPrefix(p, "/")
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) > n {
		parts = parts[:n]
	}
	out := strings.Join(parts, "/")
	if abs {
		return "/" + out
	}
	return out
}

func under(p, dir string) bool {
	if dir == "/" {
		return p != "/" && strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir+"/")
}

func relTo(p, dir string) (string, bool) {
	if !under(p, dir) {
		return "", false
	}
	return strings.TrimPrefix(p, dir+"/"), true
}
