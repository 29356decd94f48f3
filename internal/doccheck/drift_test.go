package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parseDir parses the Go files of dir that are not tests.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// lineOf returns the 1-based line of offset in text.
func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }

// outsideFences returns text with its fenced code blocks blanked, line
// breaks kept, so offsets and line numbers stay those of the file.
func outsideFences(text string) string {
	lines := strings.SplitAfter(text, "\n")
	fenced := false
	for i, l := range lines {
		fence := strings.HasPrefix(l, "```")
		if fenced || fence {
			lines[i] = strings.Repeat(" ", len(strings.TrimRight(l, "\n"))) + l[len(strings.TrimRight(l, "\n")):]
		}
		if fence {
			fenced = !fenced
		}
	}
	return strings.Join(lines, "")
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// numberWords are the counts the docs may spell out.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

// count reads a count written as digits or as a word of numberWords.
func count(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return slices.Index(numberWords, strings.ToLower(s))
}

var (
	countRE = `(\d+|` + strings.Join(numberWords, "|") + `)`
	// constructorClaim is a sentence's "six worker constructors of four
	// kinds" or "six constructors, of four kinds".
	constructorClaim = regexp.MustCompile(`(?i)\b` + countRE + `\s+(?:worker\s+)?constructors,?\s+of\s+` + countRE + `\s+kinds\b`)
)

// workerConstructors returns the exported functions of package workers
// that return a Worker, each with the type of the value it returns (the
// T of its return &T{…}): ClusterSingleton and GlobalSingleton share one.
func workerConstructors(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range parseDir(t, filepath.Join(root, "workers")) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); !ok || id.Name != "Worker" {
				continue
			}
			kind := ""
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				ret, ok := n.(*ast.ReturnStmt)
				if !ok || len(ret.Results) != 1 {
					return true
				}
				if u, ok := ret.Results[0].(*ast.UnaryExpr); ok {
					if cl, ok := u.X.(*ast.CompositeLit); ok {
						if id, ok := cl.Type.(*ast.Ident); ok {
							kind = id.Name
						}
					}
				}
				return true
			})
			if kind == "" {
				t.Fatalf("workers.%s returns a Worker but no &T{…}: say in workerConstructors how to tell its kind", fn.Name.Name)
			}
			out[fn.Name.Name] = kind
		}
	}
	if len(out) == 0 {
		t.Fatal("no constructors found in workers/: the parser or the path is wrong")
	}
	return out
}

// TestWorkerCountsMatchTheConstructors: where the docs say how many
// worker constructors of how many kinds there are ("six worker
// constructors of four kinds"), the numbers are those of package workers:
// its exported functions returning a Worker, and the distinct types they
// return. README.md and docs/workers.md must say it, and name each
// constructor.
func TestWorkerCountsMatchTheConstructors(t *testing.T) {
	ctors := workerConstructors(t)
	kinds := map[string]bool{}
	for _, k := range ctors {
		kinds[k] = true
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range ctors {
			if !yield(n) {
				return
			}
		}
	})
	mustClaim := map[string]bool{filepath.Join(root, "README.md"): true, filepath.Join(root, "docs", "workers.md"): true}
	for _, path := range append(markdownFiles(t), filepath.Join(root, "workers", "doc.go")) {
		text := readDoc(t, path)
		claims := constructorClaim.FindAllStringSubmatchIndex(text, -1)
		if mustClaim[path] && len(claims) == 0 {
			t.Errorf("%s no longer says how many worker constructors of how many kinds there are (%q finds nothing): "+
				"say it (%d constructors of %d kinds) or change the pattern", path, constructorClaim, len(ctors), len(kinds))
		}
		for _, m := range claims {
			n, k := count(text[m[2]:m[3]]), count(text[m[4]:m[5]])
			if n != len(ctors) || k != len(kinds) {
				t.Errorf("%s:%d: %q, but package workers has %d constructors (%s) of %d kinds (the types they return): fix the count",
					path, lineOf(text, m[0]), strings.Join(strings.Fields(text[m[0]:m[1]]), " "), len(ctors), strings.Join(names, ", "), len(kinds))
			}
		}
		if mustClaim[path] {
			for _, n := range names {
				if !strings.Contains(text, "`"+n) && !strings.Contains(text, "`workers."+n) {
					t.Errorf("%s does not name the constructor workers.%s (in backticks): add it where the kinds are listed", path, n)
				}
			}
		}
	}
}

// testdbTargets reads internal/testdb/targets.go: the names of the
// targets Targets returns on every machine (not those it adds under a
// condition), and for every target name the expression of its backend.
func testdbTargets(t *testing.T) (always []string, backends map[string]ast.Expr, vars map[string]ast.Expr) {
	t.Helper()
	backends, vars = map[string]ast.Expr{}, map[string]ast.Expr{}
	var targetsFn *ast.FuncDecl
	for _, f := range parseDir(t, filepath.Join(root, "internal", "testdb")) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "Targets" {
					targetsFn = d
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok || len(vs.Values) != len(vs.Names) {
						continue
					}
					for i, n := range vs.Names {
						vars[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	if targetsFn == nil {
		t.Fatal("internal/testdb has no func Targets: say in testdbTargets where the targets are listed")
	}
	var walk func(n ast.Node, conditional bool)
	walk = func(n ast.Node, conditional bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IfStmt:
				walk(n.Body, true)
				if n.Else != nil {
					walk(n.Else, true)
				}
				return false
			case *ast.CompositeLit:
				// Target{…}, or []Target{{…}, …}.
				lits := []*ast.CompositeLit{n}
				if at, ok := n.Type.(*ast.ArrayType); ok {
					if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "Target" {
						lits = nil
						for _, e := range n.Elts {
							if cl, ok := e.(*ast.CompositeLit); ok {
								lits = append(lits, cl)
							}
						}
					}
				} else if id, ok := n.Type.(*ast.Ident); !ok || id.Name != "Target" {
					return true
				}
				for _, cl := range lits {
					if name := stringField(cl, "Name"); name != "" && !conditional {
						always = append(always, name)
					}
				}
				return false
			}
			return true
		})
	}
	walk(targetsFn.Body, false)
	m, ok := vars["backends"].(*ast.CompositeLit)
	if !ok {
		t.Fatal("internal/testdb has no map backends of target names: say in testdbTargets where each target's server is chosen")
	}
	for _, e := range m.Elts {
		kv := e.(*ast.KeyValueExpr)
		if k, ok := kv.Key.(*ast.BasicLit); ok {
			name, _ := strconv.Unquote(k.Value)
			backends[name] = kv.Value
		}
	}
	return always, backends, vars
}

// stringField returns the string constant of field in the composite
// literal cl, or "".
func stringField(cl *ast.CompositeLit, field string) string {
	for _, e := range cl.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == field {
			if lit, ok := kv.Value.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				return s
			}
		}
	}
	return ""
}

// serverOf names the database behind a backend of internal/testdb, by
// the function that starts its private server or, for SQLite, its type.
var serverOf = map[string]string{
	"StartPostgres": "PostgreSQL",
	"StartMariaDB":  "MariaDB",
	"sqliteTarget":  "SQLite",
}

// backendServer returns the database of the backend expression e (a
// variable, &T{start: F} or T{…}), looked up in serverOf, and what it
// looked up.
func backendServer(e ast.Expr, vars map[string]ast.Expr) (server, key string) {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			v, ok := vars[x.Name]
			if !ok {
				return "", x.Name
			}
			e = v
			continue
		case *ast.UnaryExpr:
			e = x.X
			continue
		case *ast.CompositeLit:
			id, _ := x.Type.(*ast.Ident)
			if id == nil {
				return "", "?"
			}
			for _, el := range x.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "start" {
						if f, ok := kv.Value.(*ast.Ident); ok {
							return serverOf[f.Name], f.Name
						}
					}
				}
			}
			return serverOf[id.Name], id.Name
		}
		return "", "?"
	}
}

// tableMentions are what a "tested here" cell may say besides "yes", and
// the targets of internal/testdb that must exist for it to be true.
var tableMentions = map[string][]string{
	"PgBouncer":    {"pgbouncer"},
	"Galera":       {"galera"},
	"standby":      {"postgres-pair"},
	"replica pair": {"mariadb-pair"},
	"both drivers": {"sqlite-cgo", "sqlite-pure"},
}

var leadingVersion = regexp.MustCompile(`\s+\d.*$`)

// TestDatabaseTableMatchesTheTestTargets: the README's database table
// says "yes" under "tested here" for exactly the databases whose private
// servers (or files) internal/testdb's Targets runs on every machine, and
// the setups a "yes" names (PgBouncer, Galera, the replicated pairs, both
// SQLite drivers) are targets there.
func TestDatabaseTableMatchesTheTestTargets(t *testing.T) {
	always, backends, vars := testdbTargets(t)
	tested := map[string][]string{} // database: its targets
	for _, name := range always {
		b, ok := backends[name]
		if !ok {
			t.Fatalf("internal/testdb: Targets returns %q, which has no entry in backends", name)
		}
		server, key := backendServer(b, vars)
		if server == "" {
			t.Fatalf("internal/testdb: target %q runs on %s, which serverOf does not name: add it to serverOf", name, key)
		}
		tested[server] = append(tested[server], name)
	}
	path := filepath.Join(root, "README.md")
	found := false
	for _, tb := range tables(t, path) {
		col := slices.Index(tb.header, "tested here")
		if col < 0 || tb.header[0] != "database" {
			continue
		}
		found = true
		rows := map[string]bool{}
		for i, row := range tb.rows {
			db := leadingVersion.ReplaceAllString(row[0], "")
			rows[db] = true
			claim := strings.ToLower(strings.TrimLeft(row[col], "*"))
			yes := strings.HasPrefix(claim, "yes")
			if !yes && !strings.HasPrefix(claim, "no") {
				t.Errorf("%s:%d: %s's \"tested here\" starts with neither yes nor no: %q", path, tb.lines[i], db, row[col])
			}
			switch targets := tested[db]; {
			case yes && targets == nil:
				t.Errorf("%s:%d: says %s is tested here, but no target of internal/testdb's Targets runs on it (it runs %v): "+
					"say no, or add its target", path, tb.lines[i], db, tested)
			case !yes && targets != nil:
				t.Errorf("%s:%d: says %s is not tested here, but internal/testdb's Targets runs it on every machine (%s): say yes",
					path, tb.lines[i], db, strings.Join(targets, ", "))
			}
			if !yes {
				continue
			}
			for phrase, need := range tableMentions {
				if !strings.Contains(row[col], phrase) {
					continue
				}
				for _, n := range need {
					if _, ok := backends[n]; !ok {
						t.Errorf("%s:%d: %s's row mentions %s, but internal/testdb has no target %q: fix the row", path, tb.lines[i], db, phrase, n)
					}
				}
			}
		}
		for db, targets := range tested {
			if !rows[db] {
				t.Errorf("%s: the database table has no row for %s, which the tests run (%s): add one", path, db, strings.Join(targets, ", "))
			}
		}
	}
	if !found {
		t.Fatalf("%s has no table with the columns \"database\" and \"tested here\": say in this test where the claims moved", path)
	}
}

// exportedNames returns, by package name, the exported names of every
// Go package of the repository (every module, tests and commands
// excluded): its top-level identifiers, and T.M for the exported fields
// and methods of each of its types T.
func exportedNames(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata") {
			return filepath.SkipDir
		}
		for _, f := range parseDir(t, path) {
			pkg := f.Name.Name
			if pkg == "main" {
				continue
			}
			names := out[pkg]
			if names == nil {
				names = map[string]bool{}
				out[pkg] = names
			}
			addDecls(f, names)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// addDecls adds the exported names f declares to names.
func addDecls(f *ast.File, names map[string]bool) {
	add := func(id *ast.Ident) {
		if id.IsExported() {
			names[id.Name] = true
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				add(d.Name)
				continue
			}
			recv := d.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			if ix, ok := recv.(*ast.IndexExpr); ok {
				recv = ix.X
			}
			if ix, ok := recv.(*ast.IndexListExpr); ok {
				recv = ix.X
			}
			if id, ok := recv.(*ast.Ident); ok && d.Name.IsExported() {
				names[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						add(n)
					}
				case *ast.TypeSpec:
					add(s.Name)
					var fields *ast.FieldList
					switch ty := s.Type.(type) {
					case *ast.StructType:
						fields = ty.Fields
					case *ast.InterfaceType:
						fields = ty.Methods
					}
					if fields == nil {
						continue
					}
					for _, fl := range fields.List {
						for _, n := range fl.Names {
							if n.IsExported() {
								names[s.Name.Name+"."+n.Name] = true
							}
						}
						if len(fl.Names) == 0 { // embedded
							ty := fl.Type
							if st, ok := ty.(*ast.StarExpr); ok {
								ty = st.X
							}
							if sel, ok := ty.(*ast.SelectorExpr); ok {
								ty = sel.Sel
							}
							if id, ok := ty.(*ast.Ident); ok && id.IsExported() {
								names[s.Name.Name+"."+id.Name] = true
							}
						}
					}
				}
			}
		}
	}
}

// externalNames are the names of other modules' packages the docs
// reference, which this repository cannot check, by package as the docs
// write it.
var externalNames = map[string][]string{
	"context":   {"Context"},
	"errors":    {"As"},
	"gorm":      {"Config", "DB", "Open"},
	"metric":    {"MeterProvider"},
	"mysql":     {"Config", "New"},
	"os":        {"Hostname"},
	"postgres":  {"Config", "Open"},
	"runtime":   {"GOMAXPROCS"},
	"sdkmetric": {"WithCardinalityLimit"},
	"slog":      {"Logger"},
	"sqlite":    {"Config", "New", "Open"},
	"sqlserver": {"Open"},
	"synctest":  {"Test"},
	"time":      {"After", "AfterFunc", "Now"},
	"zap":       {"Logger"},
}

// docVariables are the variables of the docs' examples whose methods or
// fields they name (`lease.Fence`, `a.Fence`): not packages, so not
// checked.
var docVariables = map[string]bool{
	"a": true, "cfg": true, "coord": true, "db": true, "election": true, "host": true, "kit": true, "lease": true, "p": true, "slot": true,
}

// qualified is a package-qualified name in code: pkg.Name, optionally
// .Member.
var qualified = regexp.MustCompile(`(?:^|[^\w./])([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)

// TestDocsNameRealIdentifiers: every pkg.Name (and pkg.Type.Member) the
// documentation writes in backticks is exported by a package of that
// name in this repository, or is one of externalNames, or starts with a
// variable of the examples (docVariables).
func TestDocsNameRealIdentifiers(t *testing.T) {
	pkgs := exportedNames(t)
	checked := 0
	for _, path := range markdownFiles(t) {
		text := outsideFences(readDoc(t, path))
		for _, span := range backticked.FindAllStringSubmatchIndex(text, -1) {
			code := text[span[2]:span[3]]
			for _, m := range qualified.FindAllStringSubmatch(code, -1) {
				pkg, name, member := m[1], m[2], m[3]
				ref := pkg + "." + name
				where := path + ":" + strconv.Itoa(lineOf(text, span[0]))
				switch {
				case slices.Contains(externalNames[pkg], name):
				case docVariables[pkg]:
				case pkgs[pkg] == nil:
					t.Errorf("%s: `%s`: no package %s in this repository; if it is another module's, add %s to externalNames[%q], "+
						"if a variable of an example, %q to docVariables", where, ref, pkg, name, pkg, pkg)
				case !pkgs[pkg][name]:
					t.Errorf("%s: `%s`: package %s exports no %s: fix the name in the doc", where, ref, pkg, name)
				case member != "" && !pkgs[pkg][name+"."+member]:
					t.Errorf("%s: `%s.%s`: %s.%s has no exported field or method %s: fix the name in the doc", where, ref, member, pkg, name, member)
				default:
					checked++
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d names checked: the patterns or the paths are wrong", checked)
	}
}
