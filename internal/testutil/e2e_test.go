package testutil

import (
	"slices"
	"testing"
)

func TestSelectedE2E(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"systemd", []string{"systemd"}},
		{"agent,update", []string{"agent", "update"}},
		{" agent , ,bench-dns,", []string{"agent", "bench-dns"}},
	} {
		if got := selectedE2E(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("selectedE2E(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestE2E(t *testing.T) {
	t.Run("not selected", func(t *testing.T) {
		t.Setenv(E2EEnv, "update,systemd")
		ran := false
		t.Run("agent", func(t *testing.T) {
			E2E(t, E2EAgent)
			ran = true
		})
		if ran {
			t.Errorf("E2E(agent) with %s=update,systemd did not skip", E2EEnv)
		}
	})
	t.Run("selected", func(t *testing.T) {
		t.Setenv(E2EEnv, "update,agent")
		ran := false
		t.Run("agent and update", func(t *testing.T) {
			E2E(t, E2EAgent)
			E2E(t, E2EUpdate)
			ran = true
		})
		if !ran {
			t.Errorf("E2E(agent), E2E(update) with %s=update,agent skipped", E2EEnv)
		}
	})
}
