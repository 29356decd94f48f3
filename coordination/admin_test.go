package coordination

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"gorm.io/gorm"
)

// TestNewAdminValidates: a nil db, two loggers and a bad prefix are refused with errors
// that name them.
func TestNewAdminValidates(t *testing.T) {
	if _, err := NewAdmin(nil, Config{}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "db is nil") {
		t.Errorf("NewAdmin(nil) = %v, want ErrInvalidConfig saying db is nil", err)
	}
	if _, err := NewAdmin(&gorm.DB{}, Config{Logger: zap.NewNop(), Slog: slog.Default()}); !errors.Is(err, ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "Logger and Slog") {
		t.Errorf("NewAdmin(Logger and Slog) = %v, want ErrInvalidConfig naming both", err)
	}
	for _, prefix := range []string{"1bad", "has-dash_", strings.Repeat("x", 41)} {
		_, err := NewAdmin(&gorm.DB{}, Config{TablePrefix: prefix})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "TablePrefix") || !strings.Contains(err.Error(), prefix) {
			t.Errorf("NewAdmin(TablePrefix %q) = %v, want ErrInvalidConfig naming the field and the value", prefix, err)
		}
	}
}

// TestAdminOfCoordinator: the admin client of a coordinator logs with the
// coordinator's logger, and a preference window falls back to its TTL.
func TestAdminOfCoordinator(t *testing.T) {
	cfg := resignConfig()
	cfg.Logger = zaptest.NewLogger(t)
	c := newCoordinator(nil, testIdentity(t, "node-a"), cfg.withDefaults())
	a := c.Admin()
	if a.ttl != cfg.TTL || a.log != c.log {
		t.Fatalf("Coordinator.Admin() = ttl %v, want %v, and the coordinator's logger", a.ttl, cfg.TTL)
	}
}
