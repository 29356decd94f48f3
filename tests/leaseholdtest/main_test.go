package leaseholdtest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/faketime"
)

// TestMain holds the whole binary to one P under the race detector (see
// internal/faketime): the runnable examples call synctest.Test as a user
// would, not faketime.Test.
func TestMain(m *testing.M) {
	faketime.Hold()
	goleak.VerifyTestMain(m)
}
