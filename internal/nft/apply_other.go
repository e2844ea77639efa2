//go:build !linux

package nft

import (
	"errors"
	"net/netip"
	"time"
)

// ErrUnavailable marks errors of a kernel without nf_tables.
var ErrUnavailable = errors.ErrUnsupported

// Apply is Linux-only.
func Apply(r Ruleset, netnsFd int) error { return errors.ErrUnsupported }

// Delete is Linux-only.
func Delete(table string, netnsFd int) error { return errors.ErrUnsupported }

// Exists is Linux-only.
func Exists(table string, netnsFd int) (bool, error) { return false, errors.ErrUnsupported }

// Pinner is Linux-only.
type Pinner struct{}

// NewPinner is Linux-only.
func NewPinner(netnsFd int) (*Pinner, error) { return nil, errors.ErrUnsupported }

// Close is Linux-only.
func (p *Pinner) Close() error { return errors.ErrUnsupported }

// Pin is Linux-only.
func (p *Pinner) Pin(table, set string, addrs []netip.Addr, timeout time.Duration) error {
	return errors.ErrUnsupported
}

// PinFlows is Linux-only.
func (p *Pinner) PinFlows(table, set string, flows []Flow, timeout time.Duration) error {
	return errors.ErrUnsupported
}

// FlushFlows is Linux-only.
func (p *Pinner) FlushFlows(table, set string) error {
	return errors.ErrUnsupported
}

// UnpinFlows is Linux-only.
func (p *Pinner) UnpinFlows(table, set string, flows []Flow) error {
	return errors.ErrUnsupported
}
