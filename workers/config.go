package workers

import (
	"cmp"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// Defaults of Config.
const (
	defaultRestartBackoff    = time.Second
	defaultMaxRestartBackoff = 30 * time.Second
)

// Config tunes a Host. The zero value gives the documented defaults;
// NewHost checks it, and every error names the field and the values.
type Config struct {
	// RestartBackoff is the least wait after a worker function returned an
	// error or panicked, before it is called again under the same term,
	// doubling up to MaxRestartBackoff, plus up to half at random; and the
	// wait before campaigning again after it returned nil. Defaults to 1s.
	RestartBackoff time.Duration

	// MaxRestartBackoff caps the doubling of RestartBackoff. Must be at
	// least RestartBackoff. Defaults to 30s.
	MaxRestartBackoff time.Duration
}

// withDefaults returns a copy with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.RestartBackoff = cmp.Or(c.RestartBackoff, defaultRestartBackoff)
	c.MaxRestartBackoff = cmp.Or(c.MaxRestartBackoff, defaultMaxRestartBackoff)
	return c
}

// validate checks a config with defaults filled in.
func (c Config) validate() error {
	switch {
	case c.RestartBackoff < 0:
		return fmt.Errorf("%w: RestartBackoff (%v) must not be negative", coordination.ErrInvalidConfig, c.RestartBackoff)
	case c.MaxRestartBackoff < 0:
		return fmt.Errorf("%w: MaxRestartBackoff (%v) must not be negative", coordination.ErrInvalidConfig, c.MaxRestartBackoff)
	case c.MaxRestartBackoff < c.RestartBackoff:
		return fmt.Errorf("%w: MaxRestartBackoff (%v) must be at least RestartBackoff (%v)",
			coordination.ErrInvalidConfig, c.MaxRestartBackoff, c.RestartBackoff)
	}
	return nil
}
