package coordination_test

import (
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/internal/dbopen"
	"github.com/leasehold/leasehold/internal/redact"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestMySQLDSNOptions runs the cases that depend on affected-row counts and
// on how times come back against MySQL/MariaDB DSNs with and without
// clientFoundRows and parseTime. With clientFoundRows an UPDATE reports
// matched rows; without it, changed rows; leasehold must be exact either
// way. Lease times are integers, so parseTime must not matter.
func TestMySQLDSNOptions(t *testing.T) {
	t.Parallel() // see runCasesOn
	var mysql testdb.Target
	for _, tg := range testdb.Targets() {
		if tg.Dialect == "mysql" {
			mysql = tg
		}
	}
	variants := map[string]string{
		"plain":           "",
		"clientFoundRows": "clientFoundRows=true&parseTime=true",
		"parseTimeLocal":  "parseTime=true&loc=Local",
	}
	cases := []conformanceCase{
		{"AcquireRenewRelease", caseAcquireRenewRelease},
		{"StaleHolderCannotRenewOrRelease", caseStaleHolder},
		{"OneStatementPerRenewTick", caseOneStatementPerRenewTick},
		{"FenceInUserTransaction", caseFence},
		{"Pool", casePoolFive},
	}
	t.Run(mysql.Name, func(t *testing.T) {
		t.Parallel()
		runDSNVariants(t, mysql, variants, cases)
	})
}

// withMySQLOptions returns dsn with the options this file varies
// (clientFoundRows, parseTime, loc) set as params, a query string, says,
// and at their defaults where it does not name them. Every other setting
// of dsn, such as an external server's tls, is kept.
func withMySQLOptions(t *testing.T, dsn, params string) string {
	t.Helper()
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(redact.Message(dbopen.MySQL, dsn, err.Error()))
	}
	want, err := mysqldrv.ParseDSN("/?" + params)
	if err != nil {
		t.Fatalf("variant %q: %v", params, err)
	}
	cfg.ClientFoundRows, cfg.ParseTime, cfg.Loc = want.ClientFoundRows, want.ParseTime, want.Loc
	return cfg.FormatDSN()
}

func runDSNVariants(t *testing.T, mysql testdb.Target, variants map[string]string, cases []conformanceCase) {
	for name, params := range variants {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each case opens a database of its own
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					_, dsn := mysql.OpenDSN(t) // skips or fails loudly without MariaDB
					db, err := dbopen.Open(dbopen.MySQL, withMySQLOptions(t, dsn, params), &gorm.Config{Logger: logger.Discard})
					if err != nil {
						t.Fatal(err)
					}
					sqlDB, _ := db.DB()
					t.Cleanup(func() { _ = sqlDB.Close() })
					tc.fn(t, &bundle{t: t, target: mysql, db: db})
				})
			}
		})
	}
}
