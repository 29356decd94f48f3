package redact

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"testing"
)

// sampleNames maps the exported names of this package to the names the
// sample's copy gives them.
var sampleNames = map[string]string{
	"DSN":       "redactDSN",
	"Message":   "redactMessage",
	"Redacted":  "redacted",
	"ServerDSN": "serverDSN",
}

// TestSampleCopy: sample/redact.go is redact.go with the exported names
// unexported, so that the sample, which imports only leasehold's public
// packages, redacts and refuses exactly what the command does. Comments
// may differ.
func TestSampleCopy(t *testing.T) {
	want := code(t, "redact.go", sampleNames)
	got := code(t, "../../sample/redact.go", nil)
	if got != want {
		t.Errorf("sample/redact.go is not a copy of internal/redact/redact.go with %v renamed; copy it again.\n"+
			"--- internal/redact, renamed:\n%s\n--- sample:\n%s", sampleNames, want, got)
	}
}

// code returns the declarations of the Go file at path, without comments
// and after the package clause, with the identifiers in rename renamed.
func code(t *testing.T, path string, rename map[string]string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if to, ok := rename[id.Name]; ok {
				id.Name = to
			}
		}
		return true
	})
	var b bytes.Buffer
	for _, d := range f.Decls {
		if err := printer.Fprint(&b, fset, d); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
	}
	return b.String()
}
