package bindir

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

// StateName is the file beside the binaries that records what claude-update
// verified: each version's SHA-256 and source, the highest version
// installed (with the signed build date of its release manifest), and a
// hold.
const StateName = ".claude-update.state"

// maxState bounds the state file.
const maxState = 1 << 20

// Record is what was verified about one installed binary.
type Record struct {
	SHA256 string `json:"sha256"` // of claude.<version>, lowercase hex
	Size   int64  `json:"size"`
	Source string `json:"source"` // e.g. "release (signed manifest)" or "npm https://registry/"
}

// State is the content of StateName.
type State struct {
	Versions map[string]Record `json:"versions"`
	// Highest is the highest version ever installed here from a channel or
	// by name; a channel pointing lower is a downgrade.
	Highest string `json:"highest,omitempty"`
	// BuildDate is the buildDate of the signed release manifest of the
	// newest version installed from the release source.
	BuildDate string `json:"buildDate,omitempty"`
	// Hold is the version channel runs stay at, "" if none.
	Hold string `json:"hold,omitempty"`
	// Current and Previous are the versions the last switch pointed
	// claude and claude.previous at, saved before the renames.
	Current  string `json:"current,omitempty"`
	Previous string `json:"previous,omitempty"`
}

// HighestVersion returns Highest parsed, or the zero Version.
func (s *State) HighestVersion() release.Version {
	v, err := release.ParseVersion(s.Highest)
	if err != nil {
		return release.Version{}
	}
	return v
}

// HoldVersion returns the held version, if any.
func (s *State) HoldVersion() (release.Version, bool) {
	if s.Hold == "" {
		return release.Version{}, false
	}
	v, err := release.ParseVersion(s.Hold)
	return v, err == nil
}

// Record returns version v's record.
func (s *State) Record(v release.Version) (Record, bool) {
	r, ok := s.Versions[v.String()]
	return r, ok
}

// Raise records v as installed (and, if higher, as the highest).
func (s *State) Raise(v release.Version) {
	if h := s.HighestVersion(); h.IsZero() || v.Compare(h) > 0 {
		s.Highest = v.String()
	}
}

// ParseState parses the state file's content.
func ParseState(data []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	for k, r := range s.Versions {
		if _, err := release.ParseVersion(k); err != nil {
			return nil, fmt.Errorf("record of %s", release.Quote([]byte(k), 40))
		}
		if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != 32 || r.Size < 0 {
			return nil, fmt.Errorf("record of %s: bad sha256 or size", k)
		}
	}
	for _, v := range []string{s.Highest, s.Hold, s.Current, s.Previous} {
		if v != "" {
			if _, err := release.ParseVersion(v); err != nil {
				return nil, err
			}
		}
	}
	if s.Versions == nil {
		s.Versions = map[string]Record{}
	}
	return &s, nil
}

// State reads the state file; a missing one is an empty State.
func (d *Dir) State() (*State, error) {
	s, err := ReadState(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return &State{Versions: map[string]Record{}}, nil
	}
	return s, err
}

// ReadState reads the state file of the bin directory dir as State does,
// without the lock, for readers such as claude-sandbox doctor that must
// tell a missing file (an error that satisfies errors.Is(err,
// fs.ErrNotExist)) from an empty one. It only reads.
func ReadState(dir string) (*State, error) {
	p := filepath.Join(dir, StateName)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: move it away and run claude-update again", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxState+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if len(data) > maxState {
		return nil, fmt.Errorf("%s is larger than %d bytes: move it away and run claude-update again", p, maxState)
	}
	s, err := ParseState(data)
	if err != nil {
		return nil, fmt.Errorf("%s is damaged (%w): move it away and run claude-update again (installed versions will be downloaded again)", p, err)
	}
	return s, nil
}

// SaveState replaces the state file atomically. The caller holds the lock.
func (d *Dir) SaveState(s *State) error {
	// Records of binaries that are gone go with them.
	for k := range s.Versions {
		v, err := release.ParseVersion(k)
		if err != nil || !d.Has(v) {
			delete(s.Versions, k)
		}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(d.Path, TempPrefix+"state.*")
	if err != nil {
		return d.writeErr(err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return d.writeErr(err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return d.writeErr(err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(d.Path, StateName)); err != nil {
		return d.writeErr(err)
	}
	return d.syncDir()
}
