// Package dbtx ties Ferry messages to a relational database through database/sql, for
// effects that happen once even though messages are sent and delivered at least once.
//
// An Outbox makes a transactional message and a business change commit or roll back
// together: Outbox.Send runs the business function and records the message id (its
// UNIQ_KEY) in one database transaction, inside the local transaction of a
// client.TransactionProducer, and Outbox.Checker answers the broker's check-backs from
// that table alone — id present: commit; absent and the message older than
// OutboxOptions.RollbackAfter: rollback; otherwise: ask again later. A producer that dies
// between the database commit and END_TRANSACTION is thus settled correctly by any other
// producer of its group.
//
// An Inbox makes a consumer's business change happen once per message: Inbox.Handle
// records the consumer group and message id and runs the business function in one
// database transaction; a message whose id is already recorded (a redelivery) is
// skipped. The claim comes first, under the table's primary key, so two deliveries of
// one message running at once cannot both apply it: the second waits for the first's
// transaction and is skipped if it committed.
//
// Both tables are created when missing (CREATE TABLE IF NOT EXISTS) and hold one small
// row per message; Purge deletes old rows. docs/delivery.md ("Exactly once with a
// database") describes the guarantees, their cost and the failure cases.
//
// # Dialects
//
// The SQL is written once with ? placeholders and adapted per Dialect: PostgreSQL gets
// $1, $2, … placeholders; the inbox's insert-if-absent is INSERT … ON CONFLICT DO
// NOTHING on SQLite (3.24 or later) and PostgreSQL (9.5 or later) and INSERT IGNORE on
// MySQL; MySQL declares the purge index inside CREATE TABLE (it has no CREATE INDEX IF
// NOT EXISTS). Column types are VARCHAR and BIGINT, which all three accept. Times are
// Unix milliseconds from the application's clock, not the database's. The tests run on
// SQLite (modernc.org/sqlite); the PostgreSQL and MySQL statements are only checked as
// text.
//
// With SQLite, open the database with a busy timeout and immediate transactions, so
// that concurrent writers wait for each other instead of failing with SQLITE_BUSY:
//
//	sql.Open("sqlite", "file:app.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
//
// The package starts no goroutines.
package dbtx
