package workers

import (
	"cmp"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/coordination"
)

// Defaults of Config.
const (
	// DefaultRestartBackoff is the first wait before a failed worker
	// function is called again.
	DefaultRestartBackoff = time.Second
	// DefaultMaxRestartBackoff caps the doubling restart backoff.
	DefaultMaxRestartBackoff = 30 * time.Second
)

// Config tunes a Host. The zero value is valid and gives the documented
// defaults. NewHost checks it, and every error names the field and the
// values involved.
type Config struct {
	// Coordination configures the host's coordinator (see
	// coordination.Config). Its Logger is the host's logger too, and its
	// ShutdownTimeout bounds the host's shutdown. Defaults to the zero
	// coordination.Config: TTL 15s, no-op logger, migrate on start.
	Coordination coordination.Config

	// RestartBackoff is the wait after a worker function returned an error
	// or panicked, before it is called again under the same term. It
	// doubles with each consecutive failure, up to MaxRestartBackoff, and
	// starts over after a run that lasted longer than MaxRestartBackoff.
	// It is also the wait before campaigning again after a function
	// finished its work (returned nil). Defaults to 1s. It is the
	// RunOptions.Backoff of the worker's term loop (Election.Run or
	// Pool.Run of package coordination).
	RestartBackoff time.Duration

	// MaxRestartBackoff caps the doubling of RestartBackoff. Must be at
	// least RestartBackoff. Defaults to 30s.
	MaxRestartBackoff time.Duration
}

// withDefaults returns a copy with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.RestartBackoff = cmp.Or(c.RestartBackoff, DefaultRestartBackoff)
	c.MaxRestartBackoff = cmp.Or(c.MaxRestartBackoff, DefaultMaxRestartBackoff)
	return c
}

// validate checks a config with defaults filled in. The coordination
// part is checked by coordination.New.
func (c Config) validate() error {
	switch {
	case c.RestartBackoff < 0:
		return fmt.Errorf("%w: RestartBackoff (%v) must not be negative", ErrInvalidConfig, c.RestartBackoff)
	case c.MaxRestartBackoff < 0:
		return fmt.Errorf("%w: MaxRestartBackoff (%v) must not be negative", ErrInvalidConfig, c.MaxRestartBackoff)
	case c.MaxRestartBackoff < c.RestartBackoff:
		return fmt.Errorf("%w: MaxRestartBackoff (%v) must be at least RestartBackoff (%v)",
			ErrInvalidConfig, c.MaxRestartBackoff, c.RestartBackoff)
	}
	return nil
}
