package claudeupdate

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/claude-sandbox/claude-sandbox/internal/cli"
)

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func cliCode(err error) int { return cli.Code(err) }
