package doccheck

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/migrations"
	"github.com/leasehold/leasehold/workers"
)

// root is the repository root, from this package's directory.
const root = "../.."

// markdownFiles returns the Markdown files of the repository's
// documentation: README.md and docs/*.md.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "sample", "README.md"))
	return files
}

// cells splits a Markdown table row into its cells, the way GitHub
// renders it: on every '|' not escaped with a backslash.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// table is one Markdown table: the heading it stands under, its header
// cells, and its rows with their line numbers.
type table struct {
	heading string
	header  []string
	rows    [][]string
	lines   []int
}

var delimiterRow = regexp.MustCompile(`^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)

// tables reads the tables of a Markdown file, outside fenced code blocks.
func tables(t *testing.T, path string) []table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var out []table
	heading, fenced := "", false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(l, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(l), "|") || i+1 >= len(lines) || !delimiterRow.MatchString(lines[i+1]) {
			continue
		}
		tb := table{heading: heading, header: cells(l)}
		i += 2
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			tb.rows = append(tb.rows, cells(lines[i]))
			tb.lines = append(tb.lines, i+1)
		}
		i--
		out = append(out, tb)
	}
	return out
}

// TestTablesWellFormed: every row of every table has as many cells as
// its header. A row with more is rendered with cells cut off; one with
// fewer, with empty ones.
func TestTablesWellFormed(t *testing.T) {
	n := 0
	for _, path := range markdownFiles(t) {
		for _, tb := range tables(t, path) {
			n++
			for i, row := range tb.rows {
				if len(row) != len(tb.header) {
					t.Errorf("%s:%d: a row of %d cells in a table of %d columns (%s)",
						path, tb.lines[i], len(row), len(tb.header), strings.Join(tb.header, " | "))
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no tables found: the parser or the paths are wrong")
	}
}

// configTypes are the types docs/configuration.md documents field by
// field, by the name its headings give them.
var configTypes = map[string]reflect.Type{
	"coordination.Config":     reflect.TypeFor[coordination.Config](),
	"coordination.PoolConfig": reflect.TypeFor[coordination.PoolConfig](),
	"workers.Config":          reflect.TypeFor[workers.Config](),
	"migrations.Options":      reflect.TypeFor[migrations.Options](),
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestConfigurationFieldsExist: every field in a table of
// docs/configuration.md exists in a type its section names.
func TestConfigurationFieldsExist(t *testing.T) {
	checked := 0
	for _, tb := range tables(t, filepath.Join(root, "docs", "configuration.md")) {
		var types []reflect.Type
		var names []string
		for _, m := range backticked.FindAllStringSubmatch(tb.heading, -1) {
			if typ, ok := configTypes[m[1]]; ok {
				types = append(types, typ)
				names = append(names, m[1])
			}
		}
		if len(types) == 0 || len(tb.header) == 0 || tb.header[0] != "field" {
			continue
		}
		for i, row := range tb.rows {
			m := backticked.FindStringSubmatch(row[0])
			if m == nil {
				t.Errorf("docs/configuration.md:%d: no field name in %q", tb.lines[i], row[0])
				continue
			}
			found := false
			for _, typ := range types {
				if _, ok := typ.FieldByName(m[1]); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("docs/configuration.md:%d: field %q is in none of %s", tb.lines[i], m[1], strings.Join(names, ", "))
			}
			checked++
		}
	}
	if checked < len(configTypes) {
		t.Fatalf("checked %d fields: the section headings no longer name the types", checked)
	}
}

// testFuncs returns the source of every test function of the
// repository, by name.
func testFuncs(t *testing.T) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		parts := strings.Split(string(src), "\nfunc ")
		for _, p := range parts[1:] {
			name, _, ok := strings.Cut(p, "(")
			if ok && strings.HasPrefix(name, "Test") {
				out[name] = p
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	testName = regexp.MustCompile("`(Test[A-Za-z0-9_]*)`")
	// listItem is the end of one item of a list of tests: a backticked
	// name, then an optional parenthetical.
	listItem = regexp.MustCompile("`(Test[A-Za-z0-9_]*)`\\s*(\\([^()]*\\))?\\s*$")
	listSep  = regexp.MustCompile(`(,\s*|\s+and\s+)$`)
)

// fakeTimeClaims returns the tests a text says run on fake time: the
// list of backticked test names (each with an optional parenthetical)
// that stands right before each "on fake time".
func fakeTimeClaims(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "on fake time")
		if i < 0 {
			return out
		}
		before := strings.TrimRight(text[:i], " \n")
		for {
			m := listItem.FindStringSubmatchIndex(before)
			if m == nil {
				break
			}
			out = append(out, before[m[2]:m[3]])
			before = before[:m[0]]
			sep := listSep.FindStringIndex(before)
			if sep == nil {
				break
			}
			before = before[:sep[0]]
		}
		text = text[i+len("on fake time"):]
	}
}

func TestFakeTimeClaims(t *testing.T) {
	got := fakeTimeClaims("`StepDownHandsOver` on every database; `TestA`, `TestB` (error, panic) on fake time; " +
		"`TestC` (seeded churn on fake time; more), `TestD` and `TestE` on every database, `TestF` and `TestG` on fake time")
	want := []string{"TestB", "TestA", "TestG", "TestF"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fakeTimeClaims = %q, want %q", got, want)
	}
}

// TestDesignNamesRealTests: every test docs/design.md names exists, and
// every one it says runs on fake time calls testing/synctest, itself or
// through internal/faketime.
func TestDesignNamesRealTests(t *testing.T) {
	funcs := testFuncs(t)
	if len(funcs) < 100 {
		t.Fatalf("found %d test functions: the walk is wrong", len(funcs))
	}
	path := filepath.Join(root, "docs", "design.md")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range testName.FindAllStringSubmatch(string(src), -1) {
		if _, ok := funcs[m[1]]; !ok {
			t.Errorf("docs/design.md names %s, which is no test function", m[1])
		}
	}
	claims := 0
	for _, name := range fakeTimeClaims(string(src)) {
		claims++
		if body, ok := funcs[name]; ok && !strings.Contains(body, "synctest.") && !strings.Contains(body, "faketime.Test(") {
			t.Errorf("docs/design.md says %s runs on fake time, but it calls neither testing/synctest nor faketime.Test", name)
		}
	}
	if claims == 0 {
		t.Fatal("no test said to run on fake time: the parser is wrong")
	}
}
