package netnsdns

import (
	"os"
	"path/filepath"
	"strings"
)

// readPolicies reads every NAME.json of dir; a missing dir has none.
func readPolicies(dir string) map[string][]byte {
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if b, err := os.ReadFile(path); err == nil {
			out[path] = b
		}
	}
	return out
}
