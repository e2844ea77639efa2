//go:build !linux

package nft

import "errors"

// ErrUnavailable marks errors of a kernel without nf_tables.
var ErrUnavailable = errors.ErrUnsupported

// Apply is Linux-only.
func Apply(r Ruleset, netnsFd int) error { return errors.ErrUnsupported }

// Delete is Linux-only.
func Delete(table string, netnsFd int) error { return errors.ErrUnsupported }

// Exists is Linux-only.
func Exists(table string, netnsFd int) (bool, error) { return false, errors.ErrUnsupported }
