package claudeupdate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"

	"github.com/claude-sandbox/claude-sandbox/internal/download"
	"github.com/claude-sandbox/claude-sandbox/internal/npmreg"
	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// source is where versions come from.
type source interface {
	// version resolves a channel (or checks a version) without
	// downloading the binary.
	version(ctx context.Context, target string) (release.Version, error)
	// artifact returns the verified description of version v's binary.
	artifact(ctx context.Context, v release.Version) (*artifact, error)
}

// artifact is a binary that can be fetched and verified.
type artifact struct {
	// fetch writes the binary to w and fails unless it verifies. It calls
	// space with the bytes it is about to write as soon as it knows them.
	fetch func(ctx context.Context, w io.Writer, space func(int64) error) error
	// sha256 and size are the binary's, from a signed (or, with
	// --allow-unsigned, an unsigned) manifest; "" when the source has no
	// hash of the binary itself (npm: its hash covers the tarball).
	sha256 string
	size   int64
	// buildDate is the signed manifest's buildDate ("" if unsigned).
	buildDate string
	// source says where the binary came from, for the record.
	source string
}

// Limits on small documents.
const (
	maxChannel   = 1 << 10
	maxManifest  = 1 << 20
	maxSignature = 64 << 10
	maxKey       = 1 << 20
	maxPackument = 64 << 20
)

// releaseSource is the official release channel.
type releaseSource struct {
	u           *updater
	dl          *download.Client
	base        string
	keyURL      string
	fingerprint string
	platform    string
}

func (s *releaseSource) version(ctx context.Context, target string) (release.Version, error) {
	if !release.IsChannel(target) {
		return release.ParseVersion(target)
	}
	url := s.base + "/" + target
	b, err := s.dl.Open(ctx, url, nil)
	if err != nil {
		return release.Version{}, err
	}
	defer b.Close()
	// Read a prefix only: a captive portal's page is long, a version short.
	body, err := io.ReadAll(io.LimitReader(b, maxChannel))
	if err != nil {
		return release.Version{}, err
	}
	v, err := release.ParseChannel(body)
	if err != nil {
		return release.Version{}, fmt.Errorf("%s: %w (a captive portal or proxy page?)", url, err)
	}
	return v, nil
}

func (s *releaseSource) artifact(ctx context.Context, v release.Version) (*artifact, error) {
	mURL := fmt.Sprintf("%s/%s/manifest.json", s.base, v)
	data, err := s.dl.Get(ctx, mURL, maxManifest, nil)
	if err != nil {
		return nil, err
	}
	signed, err := s.verify(ctx, v, mURL, data)
	if err != nil {
		return nil, err
	}
	m, err := release.ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("manifest.json of %s: %w", v, err)
	}
	// A correctly signed manifest of another version must not pass for
	// this one.
	if m.Version != v.String() {
		return nil, fmt.Errorf("manifest.json of %s is for version %s", v, release.Quote([]byte(m.Version), 40))
	}
	b, err := m.Build(s.platform)
	if err != nil {
		return nil, err
	}
	buildDate, origin := "", "release "+s.base+" (unsigned manifest, --allow-unsigned)"
	if signed {
		buildDate, origin = m.BuildDate, "release "+s.base+" (signed manifest)"
	}
	binURL := fmt.Sprintf("%s/%s/%s/claude", s.base, v, s.platform)
	desc := fmt.Sprintf("claude %s (%s)", v, s.platform)
	return &artifact{
		fetch: func(ctx context.Context, w io.Writer, space func(int64) error) error {
			if err := space(b.Size); err != nil {
				return err
			}
			body, err := s.dl.Open(ctx, binURL, nil)
			if err != nil {
				return err
			}
			defer body.Close()
			h := sha256.New()
			r := s.u.progress(desc, binURL, b.Size, io.LimitReader(body, b.Size+1))
			n, err := io.Copy(io.MultiWriter(w, h), r)
			if err != nil {
				return err
			}
			return checkSHA256(desc, n, h.Sum(nil), b)
		},
		sha256:    b.Checksum,
		size:      b.Size,
		buildDate: buildDate,
		source:    origin,
	}, nil
}

func checkSHA256(desc string, n int64, sum []byte, b release.Build) error {
	switch {
	case n > b.Size:
		return fmt.Errorf("%s: size mismatch: got more than %d bytes, manifest says %d", desc, b.Size, b.Size)
	case n != b.Size:
		return fmt.Errorf("%s: size mismatch: got %d bytes, manifest says %d", desc, n, b.Size)
	case hex.EncodeToString(sum) != b.Checksum:
		return fmt.Errorf("%s: sha256 mismatch: got %x, manifest says %s", desc, sum, b.Checksum)
	}
	return nil
}

// verify checks the manifest's signature, or that skipping it was asked
// for a version that predates signing. signed is false in the latter case.
func (s *releaseSource) verify(ctx context.Context, v release.Version, mURL string, data []byte) (signed bool, err error) {
	if !release.Signed(v) {
		if !s.u.f.AllowUnsigned {
			return false, fmt.Errorf("%s predates signed manifests (%s): rerun with --allow-unsigned to install it on its sha256 alone", v, release.FirstSigned)
		}
		s.u.printf("%s predates signed manifests; checking its sha256 only (--allow-unsigned)", v)
		return false, nil
	}
	sig, err := s.dl.Get(ctx, mURL+".sig", maxSignature, nil)
	var se *download.StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return false, fmt.Errorf("manifest.json of %s is not signed (%w); versions from %s on must be", v, err, release.FirstSigned)
	}
	if err != nil {
		return false, err
	}
	key, err := s.dl.Get(ctx, s.keyURL, maxKey, nil)
	if err != nil {
		return false, err
	}
	kr, err := release.Keyring(key, s.fingerprint)
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.keyURL, err)
	}
	if err := release.CheckSignature(kr, data, sig); err != nil {
		return false, fmt.Errorf("manifest.json of %s: %w", v, err)
	}
	return true, nil
}

// npmSource is an npm registry: the version comes from the dist-tags of
// @anthropic-ai/claude-code, as `npm install -g @anthropic-ai/claude-code`
// would pick it, and the platform package's version from its
// optionalDependencies (the platform package's own dist-tags can be ahead).
type npmSource struct {
	u        *updater
	dl       *download.Client
	registry string
	from     string
	pkg      string // the platform package
	pks      map[string]*npmreg.Packument
}

func (s *npmSource) packument(ctx context.Context, name string) (*npmreg.Packument, error) {
	if pk := s.pks[name]; pk != nil {
		return pk, nil
	}
	url := npmreg.URL(s.registry, name)
	h := http.Header{"Accept": {"application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"}}
	data, err := s.dl.Get(ctx, url, maxPackument, h)
	var se *download.StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return nil, fmt.Errorf("registry %s (from %s) has no package %s: %w", s.registry, s.from, name, err)
	}
	if err != nil {
		return nil, err
	}
	pk, err := npmreg.ParsePackument(data, name)
	if err != nil {
		return nil, err
	}
	s.pks[name] = pk
	return pk, nil
}

func (s *npmSource) version(ctx context.Context, target string) (release.Version, error) {
	main, err := s.packument(ctx, npmreg.MainPackage)
	if err != nil {
		return release.Version{}, err
	}
	var v release.Version
	if release.IsChannel(target) {
		v, err = main.Tag(target)
	} else {
		v, err = release.ParseVersion(target)
	}
	if err != nil {
		return release.Version{}, err
	}
	return main.PlatformVersion(v, s.pkg)
}

func (s *npmSource) artifact(ctx context.Context, v release.Version) (*artifact, error) {
	pk, err := s.packument(ctx, s.pkg)
	if err != nil {
		return nil, err
	}
	a, err := pk.Artifact(v)
	if err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("%s@%s", s.pkg, v)
	lim := npmreg.LimitsFor(a.UnpackedSize)
	return &artifact{source: "npm " + s.registry, fetch: func(ctx context.Context, w io.Writer, space func(int64) error) error {
		body, err := s.dl.Open(ctx, a.Tarball, nil)
		if err != nil {
			return err
		}
		defer body.Close()
		if size := body.Size(); size > lim.Tarball() {
			return fmt.Errorf("%s: tarball is %d bytes, more than %d (%s %d, and the room tar and gzip need)", desc, size, lim.Tarball(), lim.Why, lim.Unpacked)
		}
		lim.Compressed = max(body.Size(), 0)
		h := sha512.New()
		tee := io.TeeReader(s.u.progress(desc, a.Tarball, body.Size(), body), h)
		// The space check happens when the tar header gives the binary's
		// size, before anything is written.
		var spaceErr error
		start := func(n int64) error { spaceErr = space(n); return spaceErr }
		_, xerr := npmreg.Extract(tee, w, lim, start)
		if xerr != nil && xerr == spaceErr {
			return xerr
		}
		if xerr != nil && !isWriteErr(xerr) {
			// A tarball that does not unpack may simply be the wrong one:
			// report that if the hash says so. One over a limit is not read
			// any further.
			if !errors.Is(xerr, npmreg.ErrLimit) {
				if _, err := io.Copy(io.Discard, io.LimitReader(tee, lim.Tarball())); err == nil && !matchAny(h.Sum(nil), a.SHA512) {
					return integrityErr(desc, h.Sum(nil), a.SHA512)
				}
			}
			return fmt.Errorf("%s: %w", desc, xerr)
		}
		if xerr != nil {
			return xerr
		}
		if _, err := io.Copy(io.Discard, io.LimitReader(tee, lim.Tarball())); err != nil {
			return err
		}
		if !matchAny(h.Sum(nil), a.SHA512) {
			return integrityErr(desc, h.Sum(nil), a.SHA512)
		}
		return nil
	}}, nil
}

func integrityErr(desc string, got []byte, want [][]byte) error {
	return fmt.Errorf("%s: integrity mismatch: tarball is sha512-%s, packument says sha512-%s", desc,
		base64.StdEncoding.EncodeToString(got), base64.StdEncoding.EncodeToString(want[0]))
}

func matchAny(sum []byte, want [][]byte) bool {
	for _, w := range want {
		if bytes.Equal(sum, w) {
			return true
		}
	}
	return false
}

// isWriteErr reports whether err came from writing the binary (a full
// disk), not from the download.
func isWriteErr(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT || errno == syscall.EIO)
}
