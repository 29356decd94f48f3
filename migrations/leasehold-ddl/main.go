// Command leasehold-ddl prints the SQL that creates or upgrades leasehold's
// coordination schema, for a DBA who applies schema changes by hand. It is
// the ddl subcommand of the leasehold command (cmd/leasehold) under its
// older name, with the same output:
//
//	go run github.com/leasehold/leasehold/migrations/leasehold-ddl -dialect postgres
//	go run github.com/leasehold/leasehold/migrations/leasehold-ddl -dialect sqlserver -prefix coord_ -from 5
//
// Every statement is safe to apply twice (see migrations.DDLFrom). After
// applying it, set coordination.Config.DisableAutoMigrate so the services
// only check the schema version.
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
	from := flag.Int("from", 0, "the schema version to start from; 0 means no tables yet")
	flag.Parse()
	script, err := migrations.ScriptFrom(*dialect, migrations.Options{TablePrefix: *prefix}, *from)
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasehold-ddl:", err)
		os.Exit(2)
	}
	fmt.Print(script)
}
