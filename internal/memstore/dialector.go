package memstore

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/leasehold/leasehold/internal/store"
)

// Open returns a *gorm.DB on the connection c: package coordination, given
// it, runs on c itself (store.Embedded); any SQL sent through it fails.
func (c *Conn) Open() (*gorm.DB, error) {
	return gorm.Open(dialector{c}, &gorm.Config{DisableAutomaticPing: true})
}

// dialector is the gorm dialector of a Conn: it brings the connection as
// its backend and renders no SQL of its own.
type dialector struct{ c *Conn }

var _ store.Embedded = dialector{}

func (d dialector) Backend() store.Backend { return d.c }

func (dialector) Name() string                                   { return "memory" }
func (dialector) Initialize(*gorm.DB) error                      { return nil }
func (dialector) Migrator(*gorm.DB) gorm.Migrator                { return nil }
func (dialector) DataTypeOf(*schema.Field) string                { return "" }
func (dialector) DefaultValueOf(*schema.Field) clause.Expression { return clause.Expr{} }
func (dialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) {
	_ = w.WriteByte('?')
}
func (dialector) QuoteTo(w clause.Writer, s string)   { _, _ = w.WriteString(s) }
func (dialector) Explain(sql string, _ ...any) string { return sql }
