package netnsdns

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

type failPinner struct{ err error }

func (p failPinner) Pin(string, string, []netip.Addr, time.Duration) error { return p.err }

func (p failPinner) PinFlows(string, string, []nft.Flow, time.Duration) error { return p.err }

func (p failPinner) UnpinFlows(string, string, []nft.Flow) error { return p.err }

func (p failPinner) FlushFlows(string, string) error { return p.err }

// TestPinInsideFirst: an allowed answer's addresses are pinned in the
// table inside the namespace, then on the host; without the inside's
// socket, or when that pin fails, the answer is SERVFAIL and nothing is
// pinned on the host.
func TestPinInsideFirst(t *testing.T) {
	for _, tc := range []struct {
		name       string
		inside     Pinner
		wantRcode  int
		wantInside int
	}{
		{name: "pinned inside", inside: &fakePinner{}, wantRcode: dns.RcodeSuccess, wantInside: 2},
		{name: "no socket", inside: nil, wantRcode: dns.RcodeServerFailure},
		{name: "pin fails", inside: failPinner{errors.New("no such table")}, wantRcode: dns.RcodeServerFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, pin, _ := newTestResolver(t)
			var gotGen int64 = -1
			r.Inside = func(name string, generation int64) Pinner {
				if name != "agents" {
					t.Errorf("Inside(%q), want agents", name)
				}
				gotGen = generation
				return tc.inside
			}
			resp := r.Answer(context.Background(), allowSrc, query("api.example.com.", dns.TypeA))
			if resp.Rcode != tc.wantRcode {
				t.Fatalf("Answer = %s, want %s", dns.RcodeToString[resp.Rcode], dns.RcodeToString[tc.wantRcode])
			}
			if gotGen != 0 {
				t.Errorf("Inside asked for generation %d, want the policy's 0", gotGen)
			}
			if tc.wantRcode != dns.RcodeSuccess {
				if len(resp.Answer) != 0 || len(pin.calls) != 0 {
					t.Errorf("answer %v, host pins %+v: want neither", resp.Answer, pin.calls)
				}
				return
			}
			in := tc.inside.(*fakePinner)
			if len(in.calls) != tc.wantInside || in.calls[0].table != "claude_sandbox_in" || len(pin.calls) != 2 {
				t.Errorf("inside pins %+v, host pins %+v", in.calls, pin.calls)
			}
		})
	}
}
