package release

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func newKey(t *testing.T, name string) (*openpgp.Entity, []byte, string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.invalid", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	key, fp := testutil.PublicKey(t, e)
	return e, key, fp
}

func TestPinnedFingerprint(t *testing.T) {
	// As published next to the key: 31DD DE24 DDFA B679 F42D 7BD2 BAA9 29FF 1A7E CACE.
	if got := strings.ReplaceAll("31DD DE24 DDFA B679 F42D 7BD2 BAA9 29FF 1A7E CACE", " ", ""); got != Fingerprint {
		t.Fatalf("Fingerprint = %s, want %s", Fingerprint, got)
	}
	if KeyURL != "https://downloads.claude.ai/keys/claude-code.asc" || Base != "https://downloads.claude.ai/claude-code-releases" {
		t.Fatalf("official URLs changed: %s %s", KeyURL, Base)
	}
}

func TestSignature(t *testing.T) {
	a, aKey, aFP := newKey(t, "a")
	b, bKey, bFP := newKey(t, "b")
	data := []byte(`{"version":"2.1.197"}`)
	sign := func(e *openpgp.Entity, armored bool) []byte {
		var buf bytes.Buffer
		var err error
		if armored {
			err = openpgp.ArmoredDetachSign(&buf, e, bytes.NewReader(data), nil)
		} else {
			err = openpgp.DetachSign(&buf, e, bytes.NewReader(data), nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	both := append(append([]byte{}, bKey...), aKey...)
	spaced := aFP[:4] + " " + strings.ToLower(aFP[4:])
	tests := []struct {
		name        string
		key         []byte
		fingerprint string
		data, sig   []byte
		keyErr, err string
	}{
		{name: "binary signature", key: aKey, fingerprint: aFP, data: data, sig: sign(a, false)},
		{name: "armored signature", key: aKey, fingerprint: aFP, data: data, sig: sign(a, true)},
		{name: "spaced lowercase pin", key: aKey, fingerprint: spaced, data: data, sig: sign(a, false)},
		{name: "pinned key among others", key: both, fingerprint: aFP, data: data, sig: sign(a, false)},
		{name: "other key in file", key: both, fingerprint: aFP, data: data, sig: sign(b, false), err: "signature invalid: openpgp: signature made by unknown entity"},
		{name: "fingerprint mismatch", key: bKey, fingerprint: aFP, keyErr: "signing key fingerprint mismatch: got " + bFP + ", want " + aFP},
		{name: "signed by another key", key: aKey, fingerprint: aFP, data: data, sig: sign(b, false), err: "signature invalid: openpgp: signature made by unknown entity"},
		{name: "tampered data", key: aKey, fingerprint: aFP, data: []byte(`{"version":"2.1.198"}`), sig: sign(a, false), err: "signature invalid: openpgp: invalid signature: EdDSA verification failure"},
		{name: "garbage signature", key: aKey, fingerprint: aFP, data: data, sig: []byte("<html>"), err: "signature invalid: openpgp: invalid data: tag byte does not have MSB set"},
		{name: "garbage key", key: []byte("<html>"), fingerprint: aFP, keyErr: "read signing key: openpgp: invalid data: tag byte does not have MSB set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := Keyring(tt.key, tt.fingerprint)
			if tt.keyErr != "" {
				if err == nil || err.Error() != tt.keyErr {
					t.Fatalf("Keyring() = %v, want %q", err, tt.keyErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(kr) != 1 {
				t.Fatalf("Keyring() returned %d keys, want only the pinned one", len(kr))
			}
			err = CheckSignature(kr, tt.data, tt.sig)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Fatalf("CheckSignature() = %v, want %q", err, tt.err)
			}
		})
	}
}
