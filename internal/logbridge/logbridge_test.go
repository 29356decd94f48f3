package logbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestLogger: the levels, fields, name, caller and stack of a zap entry
// arrive at the slog handler as slog's.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo, AddSource: true})
	log := Logger(h).Named("leasehold").With(zap.String("identity", "node-a"))
	log.Debug("not shown")
	log.Info("acquired lease", zap.String("lease", "global/ledger"), zap.Int64("epoch", 7),
		zap.Duration("after", 1500*time.Millisecond), zap.Strings("members", []string{"a", "b"}), zap.Error(nil))
	log.Warn("lost lease", zap.Error(errors.New("session gone")))
	log.Error("leader work still running", zap.Stack("stack"))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines; want 3 (info, warn, error; not debug):\n%s", len(lines), buf.String())
	}
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		recs = append(recs, m)
	}
	want := map[string]any{"level": "INFO", "msg": "acquired lease", "logger": "leasehold", "identity": "node-a",
		"lease": "global/ledger", "epoch": 7.0, "after": float64(1500 * time.Millisecond), "members": []any{"a", "b"}}
	for k, v := range want {
		if got, _ := json.Marshal(recs[0][k]); string(got) != mustJSON(t, v) {
			t.Errorf("info line's %s = %s; want %s", k, got, mustJSON(t, v))
		}
	}
	if _, ok := recs[0]["error"]; ok {
		t.Errorf("a nil error was logged: %v", recs[0])
	}
	if src, _ := recs[0]["source"].(map[string]any); !strings.HasSuffix(src["file"].(string), "logbridge_test.go") {
		t.Errorf("source = %v; want this test's line", recs[0]["source"])
	}
	if recs[1]["level"] != "WARN" || recs[1]["error"] != "session gone" {
		t.Errorf("warn line = %v; want level WARN, error \"session gone\"", recs[1])
	}
	if recs[2]["level"] != "ERROR" || !strings.Contains(recs[2]["stack"].(string), "TestLogger") {
		t.Errorf("error line = %v; want level ERROR and a stack naming TestLogger", recs[2])
	}
}

// TestLoggerHonoursTheHandlersLevel: zap asks the handler which levels
// are on, so a disabled line costs no record.
func TestLoggerHonoursTheHandlersLevel(t *testing.T) {
	h := slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn})
	log := Logger(h)
	if log.Core().Enabled(zap.InfoLevel) || !log.Core().Enabled(zap.WarnLevel) {
		t.Fatal("info enabled or warn disabled under a handler at warn")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
