package sandbox

import (
	"errors"
	"slices"
	"testing"
)

func TestNetworkChoice(t *testing.T) {
	const enter = "/usr/local/bin/netns-enter"
	tests := []struct {
		name      string
		files     []string // made as files, besides the base host
		whitelist []string
		hostNet   bool
		config    string
		down      []string // namespaces whose file is stale
		wantEnter string   // namespace entered, "" none
		wantErr   string
		wantNote  string
	}{
		{name: "agents up", files: []string{enter, "/run/netns/agents"}, whitelist: []string{"agents"}, wantEnter: "agents", wantNote: "network: in namespace agents, policy allowlist (3 domain lines)"},
		{name: "own namespace preferred", files: []string{enter, "/run/netns/agents", "/run/netns/agents-1000"}, whitelist: []string{"agents", "agents-1000"}, wantEnter: "agents-1000"},
		{name: "own namespace not whitelisted", files: []string{enter, "/run/netns/agents", "/run/netns/agents-1000"}, whitelist: []string{"agents"}, wantEnter: "agents"},
		{name: "own namespace whitelisted but down", files: []string{enter, "/run/netns/agents", "/run/netns/agents-1000"}, whitelist: []string{"agents", "agents-1000"}, down: []string{"agents-1000"}, wantEnter: "agents"},
		{name: "fail closed: missing", files: []string{enter}, whitelist: []string{"agents"},
			wantErr: "network namespace agents is not up: sudo systemctl start netns@agents (or, to run in the host's network, claude --sandbox-network=host)"},
		{name: "fail closed: stale file", files: []string{enter, "/run/netns/agents"}, whitelist: []string{"agents"}, down: []string{"agents"},
			wantErr: "network namespace agents is not up: sudo systemctl start netns@agents (or, to run in the host's network, claude --sandbox-network=host)"},
		{name: "escape hatch flag", files: []string{enter}, whitelist: []string{"agents"}, hostNet: true, wantNote: "network: the host's, as asked (--sandbox-network=host or network host)"},
		{name: "escape hatch config", files: []string{enter}, whitelist: []string{"agents"}, config: "network host\n", wantNote: "network: the host's, as asked (--sandbox-network=host or network host)"},
		{name: "config under a condition that does not hold", files: []string{enter}, whitelist: []string{"agents"}, config: "if pwd-under /nowhere\nnetwork host\nend\n",
			wantErr: "network namespace agents is not up: sudo systemctl start netns@agents (or, to run in the host's network, claude --sandbox-network=host)"},
		{name: "not whitelisted: as before", files: []string{enter}, wantNote: ""},
		{name: "no netns-enter: as before", files: nil, whitelist: []string{"agents"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			h.files["/run/netns"] = "d"
			for _, f := range tt.files {
				h.files[f] = "f"
			}
			s := baseSpec()
			s.Network = NetworkFacts{
				Whitelist:   tt.whitelist,
				HostNetwork: tt.hostNet,
				Up:          func(n string) bool { return !slices.Contains(tt.down, n) },
				Policy:      func(n string) string { return "policy allowlist (3 domain lines)" },
			}
			if tt.config != "" {
				s.Config = parseConfig(t, s, tt.config)
			}
			l, err := Build(h, s)
			if tt.wantErr != "" {
				var down *ErrNetnsDown
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &down) {
					t.Fatalf("Build error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			got := ""
			if len(l.NetnsEnter) > 0 {
				got = l.NetnsEnter[1]
			}
			if got != tt.wantEnter {
				t.Fatalf("entered %q, want %q (notes %q, notices %q)", got, tt.wantEnter, l.Notes, l.Notices)
			}
			if tt.wantNote != "" && !slices.Contains(l.Notes, tt.wantNote) {
				t.Fatalf("notes %q lack %q", l.Notes, tt.wantNote)
			}
		})
	}
}
