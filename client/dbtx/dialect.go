package dbtx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrInvalidOptions is wrapped by the errors of invalid OutboxOptions and InboxOptions.
var ErrInvalidOptions = errors.New("dbtx: invalid options")

// Dialect is the SQL flavour of the database: how placeholders are written and how a row
// is inserted only when its key is absent. The zero value is SQLite.
type Dialect int

// Dialects.
const (
	// SQLite: ? placeholders, INSERT … ON CONFLICT DO NOTHING (SQLite 3.24 or later).
	SQLite Dialect = iota
	// PostgreSQL: $n placeholders, INSERT … ON CONFLICT DO NOTHING (9.5 or later).
	PostgreSQL
	// MySQL: ? placeholders, INSERT IGNORE (also MariaDB).
	MySQL
)

// String names the dialect.
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	case MySQL:
		return "mysql"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// validate reports an unknown dialect.
func (d Dialect) validate() error {
	if d < SQLite || d > MySQL {
		return fmt.Errorf("%w: unknown dialect %d", ErrInvalidOptions, int(d))
	}
	return nil
}

// bind rewrites the ? placeholders of query for the dialect. The package's statements
// hold no string literals, so every ? is a placeholder.
func (d Dialect) bind(query string) string {
	if d != PostgreSQL {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// insertIfAbsent is an INSERT of columns into table that does nothing (no error, no row
// affected) when the row's key is already there.
func (d Dialect) insertIfAbsent(table string, columns ...string) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ")
	cols := strings.Join(columns, ", ")
	if d == MySQL {
		return d.bind("INSERT IGNORE INTO " + table + " (" + cols + ") VALUES (" + ph + ")")
	}
	return d.bind("INSERT INTO " + table + " (" + cols + ") VALUES (" + ph + ") ON CONFLICT DO NOTHING")
}

// createTable returns the statements that create table with the column definitions
// (primary key included) and an index on created_at, when they are missing.
func (d Dialect) createTable(table, columns string) []string {
	index := table + "_created_idx"
	if d == MySQL {
		return []string{"CREATE TABLE IF NOT EXISTS " + table + " (" + columns + ", INDEX " + index + " (created_at))"}
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS " + table + " (" + columns + ")",
		"CREATE INDEX IF NOT EXISTS " + index + " ON " + table + " (created_at)",
	}
}

// ensureTable runs createTable's statements on db; what names the table in an error.
func (d Dialect) ensureTable(ctx context.Context, db *sql.DB, what, table, columns string) error {
	for _, stmt := range d.createTable(table, columns) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("dbtx: create %s table %s: %w", what, table, err)
		}
	}
	return nil
}

// maxKeyLen is the longest message id or inbox key: the msg_id columns are VARCHAR(128)
// (checked before the insert, since MySQL's INSERT IGNORE would truncate a longer one).
const maxKeyLen = 128

// tableName is what a table name may be: a plain identifier, so that it needs no quoting
// in any dialect (and the index name derived from it stays one).
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,50}$`)

// validateTable reports a table name that is not a plain identifier.
func validateTable(name string) error {
	if !tableName.MatchString(name) {
		return fmt.Errorf("%w: table name %q: want a letter or _ then up to 50 letters, digits or _", ErrInvalidOptions, name)
	}
	return nil
}
