//go:build !linux

package netpolicy

import "errors"

// LoadConfig is Linux-only.
func LoadConfig(path string) (Config, error) { return Config{}, errors.ErrUnsupported }

// LoadNamespace is Linux-only.
func LoadNamespace(path, name, presetDir string) (Config, error) {
	return Config{}, errors.ErrUnsupported
}
