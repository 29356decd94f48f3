package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/migrations"
)

func migrateFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	dryRun := fs.Bool("dry-run", false, "print the SQL that would bring the schema to the latest version, and apply nothing")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q: migrate takes flags only", args[0])
		}
		// A dry run reads: it opens a SQLite file read-only, and only an
		// existing one. Where there is none yet, migrate would create it
		// and apply every version.
		a := create
		if *dryRun {
			a = readOnly
			if err := e.db.checkDSN(); err != nil {
				return err
			}
			if abs, err := sqliteMissing(e.db.dsn); isSQLite(e.db.driver) && errors.Is(err, os.ErrNotExist) {
				ddl, err := migrations.DDL(dialectOf(e.db.driver), migrations.Options{TablePrefix: e.db.prefix})
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "-- dry run on %s: there is no file at %s yet; migrate would create it and apply every version; "+
					"nothing was created or applied\n%s", e.where(), abs, ddl.Script)
				return nil
			}
		}
		db, closeDB, err := e.open(ctx, a)
		if err != nil {
			return err
		}
		defer closeDB()
		opts := migrations.Options{TablePrefix: e.db.prefix}
		v, err := migrations.Version(ctx, db, opts)
		if err != nil {
			return fmt.Errorf("read the schema version of %s: %w", e.where(), err)
		}
		if v >= migrations.LatestVersion {
			fmt.Fprintf(e.stdout, "schema of %s at version %d, the latest: nothing to apply\n", e.where(), v)
			return nil
		}
		if *dryRun {
			ddl, err := migrations.DDL(db.Name(), migrations.Options{TablePrefix: opts.TablePrefix, From: v})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "-- dry run on %s: the schema is at version %d; nothing was applied\n%s", e.where(), v, ddl.Script)
			return nil
		}
		applied, err := migrations.Migrate(ctx, db, opts)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", e.where(), err)
		}
		if len(applied) == 0 {
			fmt.Fprintf(e.stdout, "schema of %s at version %d, the latest: nothing to apply\n", e.where(), migrations.LatestVersion)
			return nil
		}
		fmt.Fprintf(e.stdout, "applied versions %s to %s; schema at version %d\n", joinInts(applied), e.where(), migrations.LatestVersion)
		return nil
	}
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

func ddlFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	dialect := fs.String("dialect", "", "database dialect: "+strings.Join(migrations.Dialects(), ", ")+
		" (default: the dialect of -driver)")
	from := fs.Int("from", 0, "the schema version to start from; 0 means no tables yet")
	return func(_ context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q: ddl takes flags only", args[0])
		}
		d := *dialect
		if d == "" {
			d = dialectOf(e.db.driver)
		}
		if !contains(migrations.Dialects(), d) {
			return usagef("invalid value %q for flag -dialect: want one of %s", d, strings.Join(migrations.Dialects(), ", "))
		}
		if *from < 0 || *from > migrations.LatestVersion {
			return usagef("invalid value %d for flag -from: want a schema version from 0 to %d", *from, migrations.LatestVersion)
		}
		ddl, err := migrations.DDL(d, migrations.Options{TablePrefix: e.db.prefix, From: *from})
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(e.stdout, ddl.Script)
		return err
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func resignFlags(fs *flag.FlagSet) func(context.Context, *env, []string) error {
	prefer := fs.String("prefer", "", "the process that should take the lease next: its holder (node/cluster/instance), node or instance id; "+
		"it must hold a lease or a pool membership, unless -force is given")
	force := fs.Bool("force", false, "record -prefer even when no live process answers to it")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) != 1 {
			return usagef("resign takes one lease name, as status prints it (cluster/<cluster>/<name> or global/<name>); got %d arguments", len(args))
		}
		name := args[0]
		adm, closeDB, err := e.admin(ctx, readWrite)
		if err != nil {
			return err
		}
		defer closeDB()
		if *prefer != "" && !*force {
			// A typo would keep the lease without a leader for twice its
			// holder's TTL.
			err := adm.CheckPreferred(ctx, name, *prefer)
			switch {
			case errors.Is(err, coordination.ErrInvalidConfig):
				return usagef("invalid value %q for flag -prefer: %v. "+
					"A process that holds nothing has no row to show it: give -force to prefer it anyway", *prefer, err)
			case err != nil:
				return err
			}
		}
		info, err := adm.Resign(ctx, name, *prefer)
		switch {
		case errors.Is(err, coordination.ErrNotHeld):
			// The lease has no row, or no live holder: the leases say
			// which.
			known, like, lerr := lookUp(ctx, adm, name)
			switch {
			case lerr != nil:
				return err
			case !known && len(like) > 0:
				return fmt.Errorf("no lease named %q; did you mean %s?", name, strings.Join(like, " or "))
			case !known:
				return fmt.Errorf("no lease named %q (leasehold status lists them; names look like cluster/<cluster>/<name> or global/<name>)", name)
			}
			return fmt.Errorf("lease %q has no live holder: there is nobody to ask", name)
		case errors.Is(err, coordination.ErrInvalidConfig):
			return usagef("invalid value %q for flag -prefer: %v", *prefer, err)
		case err != nil:
			return err
		}
		next := "any other process"
		if *prefer != "" {
			next = *prefer
		}
		fmt.Fprintf(e.stdout, "asked %s to hand over %s (epoch %d) to %s, in %s; it sees the request at its next renewal\n",
			info.Holder, info.Key, info.Epoch, next, e.where())
		return nil
	}
}

// lookUp reads the leases once and reports whether one is named name and,
// quoted, the keys of the election leases whose name is name in any
// scope: what a name given without its scope meant.
func lookUp(ctx context.Context, adm *coordination.Admin, name string) (known bool, like []string, err error) {
	infos, err := adm.Leases(ctx)
	if err != nil {
		return false, nil, err
	}
	for _, li := range infos {
		switch {
		case li.Key == name:
			known = true
		case !strings.Contains(li.Key, "|") && strings.HasSuffix(li.Key, "/"+name):
			like = append(like, strconv.Quote(li.Key))
		}
	}
	return known, like, nil
}
