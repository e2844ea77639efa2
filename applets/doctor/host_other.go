//go:build !linux

package doctor

import "errors"

func newHost() (Host, error) { return nil, errors.ErrUnsupported }
