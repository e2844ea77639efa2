package netnsdns

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// readPolicies reads every NAME.json of dir; a missing dir has none. Any
// other error (out of files) is returned: the caller keeps what it knows
// rather than forget every namespace.
func readPolicies(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, err
		}
		out[path] = b
	}
	return out, nil
}
