// Command leasehold-ddl prints the SQL that creates leasehold's
// coordination schema, for a DBA who applies schema changes by hand.
//
//	go run github.com/leasehold/leasehold/migrations/leasehold-ddl -dialect postgres
//	go run github.com/leasehold/leasehold/migrations/leasehold-ddl -dialect sqlserver -prefix coord_
//
// After applying it, set coordination.Config.DisableAutoMigrate so the
// services only check the schema version.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/leasehold/leasehold/migrations"
)

func main() {
	dialect := flag.String("dialect", "postgres", "database dialect: "+strings.Join(migrations.Dialects, ", "))
	prefix := flag.String("prefix", migrations.DefaultTablePrefix, "table prefix")
	flag.Parse()
	script, err := migrations.Script(*dialect, migrations.Options{TablePrefix: *prefix})
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasehold-ddl:", err)
		os.Exit(2)
	}
	fmt.Print(script)
}
