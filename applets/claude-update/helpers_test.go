package claudeupdate

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
)

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func cliCode(err error) int { return multicall.Code(err) }

func itoa(n int) string { return strconv.Itoa(n) }

func snapshotDiff(a, b map[string]string) string { return cmp.Diff(a, b) }
