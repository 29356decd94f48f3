package coordination_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
