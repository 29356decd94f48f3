package migrations_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/internal/store"
	"github.com/leasehold/leasehold/migrations"
)

func TestInvalidInput(t *testing.T) {
	for _, p := range []string{"x; DROP TABLE users; --", "1abc", "a-b", "a b", `a"b`, strings.Repeat("p", 41)} {
		_, err := migrations.DDL("postgres", migrations.Options{TablePrefix: p})
		if !errors.Is(err, coordination.ErrInvalidConfig) || !errors.Is(err, store.ErrInvalidPrefix) || !strings.Contains(err.Error(), fmt.Sprintf("%q", p)) {
			t.Errorf("prefix %q: err = %v, want ErrInvalidConfig for the prefix, naming the value", p, err)
		}
	}
	if _, err := migrations.DDL("oracle", migrations.Options{}); !errors.Is(err, coordination.ErrInvalidConfig) || !errors.Is(err, store.ErrUnsupportedDialect) || !strings.Contains(err.Error(), `"oracle"`) {
		t.Errorf("unknown dialect: err = %v", err)
	}
	if _, err := migrations.DDL("postgres", migrations.Options{From: migrations.LatestVersion + 1}); !errors.Is(err, coordination.ErrInvalidConfig) || !strings.Contains(err.Error(), "From") {
		t.Errorf("From beyond the latest version: err = %v, want ErrInvalidConfig naming From", err)
	}
}

// TestLatestVersionIsTheLastStep: the constant names the last schema step
// the store knows, so adding a step without raising it fails here.
func TestLatestVersionIsTheLastStep(t *testing.T) {
	if migrations.LatestVersion != store.LatestVersion {
		t.Fatalf("migrations.LatestVersion = %d, but the last schema step is version %d", migrations.LatestVersion, store.LatestVersion)
	}
}

// TestDialectsIsACopy: a caller that changes the slice Dialects returned
// changes neither the next result nor what DDL accepts.
func TestDialectsIsACopy(t *testing.T) {
	got := migrations.Dialects()
	if want := []string{"postgres", "mysql", "sqlite", "sqlserver"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Dialects() = %v, want %v", got, want)
	}
	got[0] = "oracle"
	if again := migrations.Dialects(); again[0] != "postgres" {
		t.Fatalf("Dialects() after a caller changed its result = %v", again)
	}
	if _, err := migrations.DDL("oracle", migrations.Options{}); !errors.Is(err, store.ErrUnsupportedDialect) {
		t.Fatalf("DDL(oracle) after a caller changed Dialects' result: err = %v, want an unsupported dialect", err)
	}
	if _, err := migrations.DDL("postgres", migrations.Options{}); err != nil {
		t.Fatalf("DDL(postgres) after a caller changed Dialects' result: %v", err)
	}
}

// TestDDLFromOutOfRange: From outside 0 to LatestVersion is an error that
// names the range.
func TestDDLFromOutOfRange(t *testing.T) {
	for _, from := range []int{-1, migrations.LatestVersion + 1} {
		_, err := migrations.DDL("postgres", migrations.Options{From: from})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("0 to %d", migrations.LatestVersion)) {
			t.Errorf("From %d: err = %v, want one naming the range 0 to %d", from, err, migrations.LatestVersion)
		}
	}
}

// TestDDLScriptIsTheStatements: Script holds every statement, in order,
// each ending with ';'.
func TestDDLScriptIsTheStatements(t *testing.T) {
	for _, d := range migrations.Dialects() {
		for from := 0; from <= migrations.LatestVersion; from++ {
			ddl, err := migrations.DDL(d, migrations.Options{From: from})
			if err != nil {
				t.Fatal(err)
			}
			rest := ddl.Script
			for _, s := range ddl.Statements {
				i := strings.Index(rest, s+";\n")
				if i < 0 {
					t.Fatalf("%s from %d: the script lacks, after the statements before it, %q", d, from, s)
				}
				rest = rest[i+len(s):]
			}
		}
	}
}
