package store_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/internal/store"
)

// The names the store recognises the driver's error by are the driver's:
// a release of the driver that moved or renamed the type, or changed its
// Number field, fails here rather than making every lost race read as an
// error.
func TestMySQLErrorNumberReadsTheDriversType(t *testing.T) {
	typ := reflect.TypeFor[mysql.MySQLError]()
	if typ.PkgPath() != store.MySQLDriverPackage || typ.Name() != store.MySQLErrorType {
		t.Fatalf("the driver's error type is %s.%s, the store looks for %s.%s",
			typ.PkgPath(), typ.Name(), store.MySQLDriverPackage, store.MySQLErrorType)
	}
	if f, ok := typ.FieldByName("Number"); !ok || f.Type.Kind() != reflect.Uint16 {
		t.Fatalf("the driver's error has no Number field of type uint16 (%+v)", f)
	}
}

// MySQLError has the driver's type name and field, in another package.
type MySQLError struct{ Number uint16 }

func (e *MySQLError) Error() string { return fmt.Sprintf("not the driver's: %d", e.Number) }

func TestMySQLErrorNumber(t *testing.T) {
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
	dup := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}
	for _, tc := range []struct {
		name string
		err  error
		want uint16
		ok   bool
	}{
		{"nil", nil, 0, false},
		{"the driver's error", deadlock, 1213, true},
		{"wrapped", fmt.Errorf("renew: %w", fmt.Errorf("exec: %w", deadlock)), 1213, true},
		{"joined, second", errors.Join(errors.New("first"), dup), 1062, true},
		{"joined, wrapped, first found first", fmt.Errorf("tx: %w", errors.Join(fmt.Errorf("a: %w", dup), deadlock)), 1062, true},
		{"a nil pointer", (*mysql.MySQLError)(nil), 0, false},
		{"a type of that name elsewhere", &MySQLError{Number: 1213}, 0, false},
		{"text that reads like it", errors.New("Error 1213 (40001): Deadlock found"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := store.MySQLErrorNumber(tc.err)
			if n != tc.want || ok != tc.ok {
				t.Fatalf("MySQLErrorNumber(%v) = %d, %v; want %d, %v", tc.err, n, ok, tc.want, tc.ok)
			}
			var me *mysql.MySQLError
			as := errors.As(tc.err, &me)
			if me == nil {
				as = false // a nil *MySQLError has no number to read
			}
			if as != tc.ok || as && me.Number != n {
				t.Fatalf("errors.As finds %v (%v), MySQLErrorNumber %d, %v", as, me, n, ok)
			}
		})
	}
}

func TestMySQLLostRace(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&mysql.MySQLError{Number: 1213}, true},
		{fmt.Errorf("commit: %w", &mysql.MySQLError{Number: 1213}), true},
		{fmt.Errorf("commit: %w", store.ErrRolledBackUnderneath), true},
		{&mysql.MySQLError{Number: 1205}, false}, // lock wait timeout: not rolled back whole
		{errors.New("driver: bad connection"), false},
	} {
		if got := store.MySQLLostRace(tc.err); got != tc.want {
			t.Errorf("lostRace(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
