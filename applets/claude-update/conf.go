package claudeupdate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// confName is the configuration file's name in buildinfo.Sysconfdir.
const confName = "claude-update.conf"

// maxConf bounds the configuration file; it holds one setting.
const maxConf = 64 << 10

// conf is what the configuration file sets; "" is not set.
type conf struct {
	source string // "release" or "npm"
}

// parseConf parses the configuration file at path (named in errors): blank
// lines, lines starting with #, and at most one "source release" or
// "source npm" line. Anything else is refused, naming path:line.
func parseConf(data []byte, path string) (conf, error) {
	var c conf
	for i, line := range strings.Split(string(data), "\n") {
		at := fmt.Sprintf("%s:%d", quote.String(path), i+1)
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
			continue
		case fields[0] != "source":
			return conf{}, fmt.Errorf("%s: unknown setting %s: the only one is source (release or npm)", at, quote.String(fields[0]))
		case len(fields) != 2 || fields[1] != "release" && fields[1] != "npm":
			return conf{}, fmt.Errorf("%s: %s: want source release or source npm", at, quote.String(strings.TrimSpace(line)))
		case c.source != "":
			return conf{}, fmt.Errorf("%s: source set twice: keep one source line", at)
		}
		c.source = fields[1]
	}
	return c, nil
}

// loadConf reads the configuration file at path ("" or a missing file is
// an empty conf). trust, if not nil, vets the file first: one it refuses
// is skipped with one line through logf.
func loadConf(path string, trust func(what, path string) error, logf func(string, ...any)) (conf, error) {
	if path == "" {
		return conf{}, nil
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return conf{}, nil
	}
	if trust != nil {
		if err := trust("config", path); err != nil {
			logf("%v; skipped", err)
			return conf{}, nil
		}
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return conf{}, nil
	}
	if err != nil {
		return conf{}, err
	}
	if len(data) > maxConf {
		return conf{}, fmt.Errorf("%s is larger than %d bytes: it holds one source line", quote.String(path), maxConf)
	}
	return parseConf(data, path)
}
