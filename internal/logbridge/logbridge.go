// Package logbridge writes zap's log entries to a log/slog handler, so
// that a program that logs with slog receives leasehold's lines.
package logbridge

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Logger returns a zap logger whose entries h receives: zap's debug,
// info, warn and error levels as slog's (the higher ones as error), the
// fields as attributes of the same keys and kinds (an error as itself),
// the logger's name as the attribute "logger" and the caller as the
// record's source.
func Logger(h slog.Handler) *zap.Logger {
	return zap.New(core{h: h}, zap.AddCaller())
}

type core struct{ h slog.Handler }

func (c core) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), level(l))
}

func (c core) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return c
	}
	return core{h: c.h.WithAttrs(attrs(fields))}
}

func (c core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	var pc uintptr
	if e.Caller.Defined {
		pc = e.Caller.PC
	}
	r := slog.NewRecord(e.Time, level(e.Level), e.Message, pc)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (core) Sync() error { return nil }

// level is the slog level of a zap level.
func level(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// attrs converts zap fields to slog attributes: strings, numbers,
// booleans, durations and errors directly, any other field as zap's map
// encoder renders it.
func attrs(fields []zapcore.Field) []slog.Attr {
	as := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		switch f.Type {
		case zapcore.StringType:
			as = append(as, slog.String(f.Key, f.String))
		case zapcore.Int64Type, zapcore.Int32Type, zapcore.Int16Type, zapcore.Int8Type:
			as = append(as, slog.Int64(f.Key, f.Integer))
		case zapcore.Uint64Type, zapcore.Uint32Type, zapcore.Uint16Type, zapcore.Uint8Type:
			as = append(as, slog.Uint64(f.Key, uint64(f.Integer)))
		case zapcore.BoolType:
			as = append(as, slog.Bool(f.Key, f.Integer == 1))
		case zapcore.DurationType:
			as = append(as, slog.Duration(f.Key, time.Duration(f.Integer)))
		case zapcore.ErrorType:
			as = append(as, slog.Any(f.Key, f.Interface))
		case zapcore.SkipType:
		default:
			enc := zapcore.NewMapObjectEncoder()
			f.AddTo(enc)
			for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
				as = append(as, slog.Any(k, enc.Fields[k]))
			}
		}
	}
	return as
}
