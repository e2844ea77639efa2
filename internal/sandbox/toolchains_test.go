package sandbox

import (
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
)

// The user's npm and cargo settings reach the sandbox as files the
// launcher writes, read-only and in no host directory: npm reads the
// npmrc as its user config, cargo the config as the root's; tokens stay
// behind.
func TestToolchainGeneratedSettings(t *testing.T) {
	const tok = "npm_PLANTEDTOKEN"
	h := debianHost()
	for _, d := range []string{"/home/u/.cargo", "/etc/corp"} {
		h.files[d] = "d"
	}
	h.files["/home/u/.npmrc"] = "f"
	h.contents["/home/u/.npmrc"] = "registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=" + tok + "\n@corp:registry=https://npm.corp.example/corp/\ncafile=/etc/corp/ca.pem\n"
	h.files["/etc/corp/ca.pem"] = "f"
	h.contents["/etc/corp/ca.pem"] = "-----BEGIN CERTIFICATE-----\nTUlJQnN6Q0NBVm1nQXdJQkFnSVU=\n-----END CERTIFICATE-----\n"
	h.files["/home/u/.cargo/config.toml"] = "f"
	h.contents["/home/u/.cargo/config.toml"] = "[source.crates-io]\nreplace-with = \"corp\"\n[source.corp]\nregistry = \"sparse+https://crates.corp.example/\"\n[registries.corp]\ntoken = \"" + tok + "\"\n"
	s := baseSpec()
	s.Environ = append(append([]string(nil), baseEnv...), "NPM_CONFIG_USERCONFIG=/home/u/.npmrc")
	l, err := Build(h, s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	gen := map[string]string{}
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.ROData {
			gen[o.Dest] = string(o.Data)
			if o.Perms != 0o444 {
				t.Errorf("%s has mode %v, want 0444", o.Dest, o.Perms)
			}
		}
	}
	for dest, want := range map[string][]string{
		InsideNpmrc:       {"\nregistry=https://npm.corp.example/\n", "\n@corp:registry=https://npm.corp.example/corp/\n", "\ncafile=/etc/corp/ca.pem\n"},
		InsideCargoConfig: {"\n[source.crates-io]\nreplace-with = \"corp\"\n", "\n[source.corp]\nregistry = \"sparse+https://crates.corp.example/\"\n"},
	} {
		for _, w := range want {
			if !strings.Contains(gen[dest], w) {
				t.Errorf("generated %s = %q, want it to hold %q", dest, gen[dest], w)
			}
		}
		if strings.Contains(gen[dest], tok) {
			t.Errorf("generated %s holds the token:\n%s", dest, gen[dest])
		}
	}
	env := strings.Join(l.EnvSet, "\n")
	if !strings.Contains(env, "npm_config_userconfig="+InsideNpmrc) {
		t.Errorf("npm_config_userconfig not set to %s: %q", InsideNpmrc, l.EnvSet)
	}
	if !strings.Contains(strings.Join(l.EnvRemoved, " "), "NPM_CONFIG_USERCONFIG") {
		t.Errorf("the host's NPM_CONFIG_USERCONFIG stays inside: removed %q", l.EnvRemoved)
	}
	// The CA file it names is shown, read-only.
	shown := false
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.ROBind && o.Dest == "/etc/corp/ca.pem" {
			shown = true
		}
	}
	if !shown {
		t.Errorf("the CA file is not bound")
	}
	argv := strings.Join(l.Plan.Args(), " ")
	if !strings.Contains(argv, "--perms 0444 --ro-bind-data - "+InsideNpmrc) || strings.Contains(argv, tok) {
		t.Errorf("bwrap arguments: %s", argv)
	}
}

// A bind of a host directory over where a file would be generated keeps
// it from being made (bwrap would make the file to mount on there).
func TestToolchainGeneratedNotInHostDirectory(t *testing.T) {
	l := &Launch{}
	l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Bind, Src: "/srv/run", Dest: "/run"})
	if l.generate(InsideNpmrc, []byte("registry=https://x/\n")) {
		t.Errorf("generate(%s) under a bind of /run = true, want false", InsideNpmrc)
	}
	if len(l.Plan.Ops) != 1 || !strings.Contains(strings.Join(l.Notes, "\n"), "not made: it lies in /run, a directory of the host") {
		t.Errorf("ops %v notes %q", l.Plan.Ops, l.Notes)
	}
}

// A configuration file reached through a symlink into what the sandbox
// writes is the agent's: not read.
func TestToolchainSettingsThroughWritableLink(t *testing.T) {
	h := debianHost()
	h.files["/home/u/other/npmrc"] = "f"
	h.contents["/home/u/other/npmrc"] = "registry=https://evil.example/\n"
	h.files["/home/u/.npmrc-corp"] = "/home/u/other/npmrc"
	s := baseSpec()
	s.Environ = append(append([]string(nil), baseEnv...), "NPM_CONFIG_USERCONFIG=/home/u/.npmrc-corp")
	s.Config = parseConfig(t, s, "rw ~/other")
	l, err := Build(h, s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.ROData {
			t.Errorf("generated %s from the agent's file:\n%s", o.Dest, o.Data)
		}
	}
	notes := strings.Join(l.Notes, "\n")
	for _, want := range []string{
		"toolchain settings: /home/u/.npmrc-corp: not read: it is /home/u/other/npmrc, in /home/u/other, which the sandbox can write",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}
