package netnsdns

import "time"

// flagDuration is a flag.Value of a duration, zero when unset.
type flagDuration time.Duration

func (d *flagDuration) String() string { return time.Duration(*d).String() }

func (d *flagDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	*d = flagDuration(v)
	return err
}
