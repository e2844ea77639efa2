package release

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// KeyURL is where upstream publishes the manifest signing key.
const KeyURL = "https://downloads.claude.ai/keys/claude-code.asc"

// Fingerprint is the pinned fingerprint of the manifest signing key
// (31DD DE24 DDFA B679 F42D 7BD2 BAA9 29FF 1A7E CACE, as published with the
// key at KeyURL). A key fetched from KeyURL is used only if its primary key
// has this fingerprint.
const Fingerprint = "31DDDE24DDFAB679F42D7BD2BAA929FF1A7ECACE"

// FirstSigned is the first version whose manifest upstream signs.
var FirstSigned = Version{Major: 2, Minor: 1, Patch: 89}

// Signed reports whether upstream signs the manifest of v.
func Signed(v Version) bool { return v.Compare(FirstSigned) >= 0 }

// ErrFingerprint is returned when no key in the key file has the pinned
// fingerprint.
var ErrFingerprint = errors.New("signing key fingerprint mismatch")

// Keyring reads an OpenPGP key file (armored or binary) and returns the key
// whose primary fingerprint is fingerprint (40 hex digits, any case, spaces
// allowed), and only that key.
func Keyring(key []byte, fingerprint string) (openpgp.EntityList, error) {
	want := strings.ToUpper(strings.ReplaceAll(fingerprint, " ", ""))
	var (
		el  openpgp.EntityList
		err error
	)
	if bytes.HasPrefix(bytes.TrimSpace(key), []byte("-----BEGIN")) {
		el, err = readArmoredKeys(key)
	} else {
		el, err = openpgp.ReadKeyRing(bytes.NewReader(key))
	}
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	var got []string
	for _, e := range el {
		fp := strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
		if fp == want {
			return openpgp.EntityList{e}, nil
		}
		got = append(got, fp)
	}
	return nil, fmt.Errorf("%w: got %s, want %s", ErrFingerprint, strings.Join(got, ", "), want)
}

// readArmoredKeys reads every armored block of key (a key file may hold
// several, one after the other).
func readArmoredKeys(key []byte) (openpgp.EntityList, error) {
	var el openpgp.EntityList
	// armor.Decode reads ahead, so each block gets its own reader.
	marker := []byte("-----BEGIN ")
	for len(key) > 0 {
		i := bytes.Index(key, marker)
		if i < 0 {
			break
		}
		key = key[i:]
		next := bytes.Index(key[len(marker):], marker)
		block := key
		if next >= 0 {
			block, key = key[:len(marker)+next], key[len(marker)+next:]
		} else {
			key = nil
		}
		b, err := armor.Decode(bytes.NewReader(block))
		if err != nil {
			return nil, err
		}
		if b.Type != openpgp.PublicKeyType {
			return nil, fmt.Errorf("armored block is %q, want %q", b.Type, openpgp.PublicKeyType)
		}
		more, err := openpgp.ReadKeyRing(b.Body)
		if err != nil {
			return nil, err
		}
		el = append(el, more...)
	}
	return el, nil
}

// CheckSignature verifies the detached signature sig (armored or binary)
// over data with the keys of keyring.
func CheckSignature(keyring openpgp.EntityList, data, sig []byte) error {
	var err error
	if bytes.HasPrefix(bytes.TrimSpace(sig), []byte("-----BEGIN")) {
		_, err = openpgp.CheckArmoredDetachedSignature(keyring, bytes.NewReader(data), bytes.NewReader(sig), nil)
	} else {
		_, err = openpgp.CheckDetachedSignature(keyring, bytes.NewReader(data), bytes.NewReader(sig), nil)
	}
	if err != nil {
		return fmt.Errorf("signature invalid: %w", err)
	}
	return nil
}
