package shapecheck

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../.."

// libraryModules are the modules the library's own packages (the root
// module's, tests aside) may import, and why.
var libraryModules = map[string]string{
	"gorm.io/gorm":                    "the database, through the application's handle",
	"gorm.io/plugin/dbresolver":       "the primary of a handle with read replicas",
	"go.uber.org/zap":                 "logging",
	"github.com/google/uuid":          "session ids",
	"go.opentelemetry.io/otel":        "metric and span attributes, span status codes",
	"go.opentelemetry.io/otel/metric": "the metric API",
	"go.opentelemetry.io/otel/trace":  "the trace API",
	"github.com/jackc/pgx/v5":         "PostgreSQL's release notifications (pgnotify)",
	"github.com/robfig/cron/v3":       "cron expressions of scheduled workers",
}

// testModules are the modules the root module's own tests need beyond
// those, and why: every other test dependency lives in a nested module
// (docs/design.md, "Modules").
var testModules = map[string]string{
	"go.uber.org/goleak":    "the goroutine check of the tests that stay beside the code",
	"gorm.io/driver/sqlite": "the database of the runnable examples in the package documentation",
	"modernc.org/sqlite":    "its pure-Go driver, so that the examples run without cgo",
}

// sourceFile is one parsed non-test Go file of the library.
type sourceFile struct {
	path  string // relative to root
	pkg   string // directory relative to root
	lines int
	ast   *ast.File
}

// libraryFiles parses every non-test Go file of the root module: not the
// nested modules (sample/, tools/) and not testdata.
func libraryFiles(t *testing.T) []sourceFile {
	t.Helper()
	fset := token.NewFileSet()
	var out []sourceFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, sourceFile{
			path:  filepath.ToSlash(rel),
			pkg:   filepath.ToSlash(filepath.Dir(rel)),
			lines: strings.Count(string(src), "\n"),
			ast:   f,
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no Go files found below %s", root)
	}
	return out
}

// under reports whether dir is one of the directories or below one.
func under(dir string, dirs ...string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

func TestShape(t *testing.T) {
	files := libraryFiles(t)

	t.Run("NoBranchOnDialectName", func(t *testing.T) {
		names := map[string]bool{"Postgres": true, "MySQL": true, "SQLite": true, "SQLServer": true}
		literals := map[string]bool{`"postgres"`: true, `"mysql"`: true, `"sqlite"`: true, `"sqlserver"`: true}
		branches := 0
		for _, f := range files {
			if !under(f.pkg, "internal/store") {
				continue
			}
			check := func(e ast.Node, what string) {
				if e == nil {
					return
				}
				ast.Inspect(e, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.Ident:
						if names[x.Name] {
							branches++
							t.Errorf("%s: a %s names the dialect %s; a database's difference belongs in its dialect's file", f.path, what, x.Name)
						}
					case *ast.BasicLit:
						if literals[x.Value] {
							branches++
							t.Errorf("%s: a %s compares with the dialect name %s; a database's difference belongs in its dialect's file", f.path, what, x.Value)
						}
					case *ast.SelectorExpr:
						if x.Sel.Name == "name" || x.Sel.Name == "Name" {
							if id, ok := x.X.(*ast.Ident); ok && (id.Name == "d" || id.Name == "f" || id.Name == "facts") {
								branches++
								t.Errorf("%s: a %s reads the dialect's name (%s.%s); a database's difference belongs in its dialect's file", f.path, what, id.Name, x.Sel.Name)
							}
						}
					}
					return true
				})
			}
			ast.Inspect(f.ast, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.IfStmt:
					check(x.Cond, "condition")
				case *ast.SwitchStmt:
					check(x.Tag, "switch")
					for _, s := range x.Body.List {
						for _, e := range s.(*ast.CaseClause).List {
							check(e, "case")
						}
					}
				}
				return true
			})
		}
		t.Logf("branches of internal/store on a dialect's name: %d (the dialect is picked once, from a map by name)", branches)
	})

	t.Run("RootRequirements", func(t *testing.T) {
		direct := directRequirements(t, filepath.Join(root, "go.mod"))
		for _, m := range direct {
			if libraryModules[m] == "" && testModules[m] == "" {
				t.Errorf("root go.mod requires %s, which is neither the library's nor one its own tests may need; "+
					"a driver, exporter or test tool belongs in a nested module (docs/design.md, \"Modules\")", m)
			}
		}
		t.Logf("root go.mod: %d direct requirements, %d of them for the library: %s",
			len(direct), len(libraryModules), strings.Join(direct, ", "))
	})
	t.Run("LibraryImports", func(t *testing.T) {
		// What a program that imports the library can link: the modules
		// of every package the root module's packages import, tests aside.
		list := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if not .Module.Main}}{{.Module.Path}}{{end}}{{end}}", "./...")
		list.Dir = root
		out, err := list.Output()
		if err != nil {
			t.Fatalf("go list -deps ./...: %v", err)
		}
		seen := map[string]bool{}
		for _, m := range strings.Fields(string(out)) {
			seen[m] = true
		}
		direct := map[string]bool{}
		for _, m := range directRequirements(t, filepath.Join(root, "go.mod")) {
			direct[m] = true
		}
		for m := range seen {
			if direct[m] && libraryModules[m] == "" {
				t.Errorf("the library's packages import %s, a module only its tests may need", m)
			}
		}
		for m := range libraryModules {
			if !seen[m] {
				t.Errorf("%s is listed as the library's, but no package of it is imported", m)
			}
		}
	})
}

// directRequirements lists the modules go.mod requires without an
// "// indirect" comment.
func directRequirements(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	block := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			block = true
			continue
		case block && line == ")":
			block = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !block:
			continue
		}
		if line == "" || strings.HasPrefix(line, "//") || strings.Contains(line, "// indirect") {
			continue
		}
		out = append(out, strings.Fields(line)[0])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no requirements read", path)
	}
	sort.Strings(out)
	return out
}
