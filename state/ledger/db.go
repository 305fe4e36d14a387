package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// DB is the Ledger in a SQL database, SQLite or PostgreSQL. Both engines run
// the same statements; the dialect holds the few things that differ. It is
// safe for concurrent use.
type DB struct {
	db      *sql.DB
	d       *dialect
	version int

	// inserts are the prepared INSERT statements, by rows per statement
	// (insertSizes); insertTag the one of a tag row.
	mu        sync.Mutex
	inserts   map[int]*sql.Stmt
	insertTag *sql.Stmt
}

// dialect is what one engine does its own way.
type dialect struct {
	name string
	// migrations is the directory of the engine's files in migrationFiles.
	migrations string
	// versionTable creates ledger_schema_version if it is missing.
	versionTable string
	// lock, when set, is run first in each migration transaction to keep
	// concurrent openers apart.
	lock string
	// param is the placeholder of the i-th (from 1) parameter of a
	// statement.
	param func(i int) string
	// timeValue is how the engine holds a point in time.
	timeValue func(time.Time) any
	// refused reports whether err is the database refusing the data, which
	// no retry will change, rather than the database failing.
	refused func(err error) bool
}

// open migrates db with the dialect's migrations and wraps it; on failure
// it closes db.
func open(ctx context.Context, db *sql.DB, d *dialect) (*DB, error) {
	ms, err := loadMigrations(migrationFiles, d.migrations)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	version, err := migrate(ctx, db, d, ms)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &DB{db: db, d: d, version: version}, nil
}

// Driver returns DriverSQLite or DriverPostgres.
func (db *DB) Driver() string { return db.d.name }

// SchemaVersion returns the schema version the ledger was at once opened.
func (db *DB) SchemaVersion() int { return db.version }

// insertColumns are the columns Insert writes, in the order of values.
var insertColumns = []string{
	"request_id", "occurred_at", "tenant", "app", "key_name", "route",
	"requested_model", "served_model", "provider", "model", "stream", "attempts",
	"fallback_reasons", "input_tokens", "output_tokens", "cached_tokens", "cost_micro_usd",
	"latency_us", "ttft_us", "status", "error_type", "cache_hit", "usage_estimated",
	"strong_cost_micro_usd", "saved_micro_usd", "price_source", "trace_id", "route_reason",
	"tags", "session_id", "domain", "routing_score",
}

// insertSizes are the rows one INSERT statement takes, largest first: a
// batch is written as statements of these sizes, each prepared once, since
// compiling a statement of a batch's own size each time was a sixth of the
// writer's work. The largest keeps one statement's parameters well inside
// both engines' limits (32766 for SQLite, 65535 for PostgreSQL).
var insertSizes = []int{64, 8, 1}

func (db *DB) values(r *Record) ([]any, error) {
	reasons, err := json.Marshal(r.FallbackReasons)
	if err != nil {
		return nil, err
	}
	if r.FallbackReasons == nil {
		reasons = []byte("[]")
	}
	tags, err := tagsJSON(r.Tags)
	if err != nil {
		return nil, err
	}
	return []any{
		r.RequestID, db.d.timeValue(r.Time), r.Tenant, r.App, r.KeyName, r.Route,
		r.RequestedModel, r.ServedModel, r.Provider, r.Model(), r.Stream, int64(r.Attempts),
		string(reasons), r.InputTokens, r.OutputTokens, r.CachedTokens, r.CostMicros,
		r.Latency.Microseconds(), r.TimeToFirstToken.Microseconds(), int64(r.Status), r.ErrorType, r.CacheHit,
		r.UsageEstimated, r.StrongCostMicros, r.SavedMicros, r.PriceSource, r.TraceID, r.RouteReason,
		tags, r.SessionID, r.Domain, r.RoutingScore,
	}, nil
}

// tagsJSON is the tags column of a record: its tags as a JSON object,
// keys sorted (encoding/json sorts them), so the same tags are always the
// same text; "{}" for none.
func tagsJSON(tags map[string]string) (string, error) {
	if len(tags) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(tags)
	return string(b), err
}

// Insert implements [Ledger.Insert]. Records are stored normalised: see
// [Record] for what the ledger keeps of times and text.
func (db *DB) Insert(ctx context.Context, records []Record) (n int, err error) {
	if len(records) == 0 {
		return 0, nil
	}
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, db.classify(err)
	}
	defer func() {
		if err != nil {
			err = db.classify(errors.Join(err, ignoreDone(tx.Rollback())))
		}
	}()
	args := make([]any, 0, insertSizes[0]*len(insertColumns))
	var tagged []Record
	for len(records) > 0 {
		size := insertSizes[len(insertSizes)-1]
		for _, s := range insertSizes {
			if s <= len(records) {
				size = s
				break
			}
		}
		args = args[:0]
		for i := range records[:size] {
			r := records[i].normalized()
			if r.RequestID == "" {
				return 0, errNoRequestID
			}
			v, err := db.values(&r)
			if err != nil {
				return 0, err
			}
			args = append(args, v...)
			if len(r.Tags) > 0 {
				tagged = append(tagged, r)
			}
		}
		records = records[size:]
		st, err := db.insert(ctx, size)
		if err != nil {
			return 0, err
		}
		res, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		if err != nil {
			return 0, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		n += int(k)
		// An embedded database inserts on this goroutine, a millisecond or
		// so a statement: let the requests waiting for the processor run
		// between statements rather than behind a whole batch.
		runtime.Gosched()
	}
	if err := db.writeTags(ctx, tx, tagged); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return n, nil
}

// writeTags writes a row of usage_tags for each tag of the (normalised)
// records, in the transaction that wrote them. A tag row goes in only
// when the ledger's row of its request holds the same tags: a record
// written again with other tags (a retried batch cannot, but a client
// choosing its request ID could) changes nothing, like its row.
func (db *DB) writeTags(ctx context.Context, tx *sql.Tx, records []Record) error {
	if len(records) == 0 {
		return nil
	}
	st, err := db.tagStatement(ctx)
	if err != nil {
		return err
	}
	st = tx.StmtContext(ctx, st)
	for i := range records {
		r := &records[i]
		tags, err := tagsJSON(r.Tags)
		if err != nil {
			return err
		}
		for k, v := range r.Tags {
			if _, err := st.ExecContext(ctx, r.RequestID, k, v, r.RequestID, tags); err != nil {
				return err
			}
		}
	}
	return nil
}

// tagStatement is the prepared statement of one tag row.
func (db *DB) tagStatement(ctx context.Context) (*sql.Stmt, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.insertTag != nil {
		return db.insertTag, nil
	}
	p := db.d.param
	st, err := db.db.PrepareContext(ctx, "INSERT INTO usage_tags (request_id, tag_key, tag_value) SELECT CAST("+
		p(1)+" AS TEXT), CAST("+p(2)+" AS TEXT), CAST("+p(3)+" AS TEXT) WHERE EXISTS (SELECT 1 FROM usage_records WHERE request_id = "+
		p(4)+" AND tags = "+p(5)+") ON CONFLICT (request_id, tag_key) DO NOTHING")
	if err != nil {
		return nil, err
	}
	db.insertTag = st
	return st, nil
}

// insert is the prepared statement inserting rows records.
func (db *DB) insert(ctx context.Context, rows int) (*sql.Stmt, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if st := db.inserts[rows]; st != nil {
		return st, nil
	}
	var q strings.Builder
	q.WriteString("INSERT INTO usage_records (" + strings.Join(insertColumns, ", ") + ") VALUES ")
	for i := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(")
		for j := range insertColumns {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString(db.d.param(i*len(insertColumns) + j + 1))
		}
		q.WriteString(")")
	}
	q.WriteString(" ON CONFLICT (request_id) DO NOTHING")
	st, err := db.db.PrepareContext(ctx, q.String())
	if err != nil {
		return nil, err
	}
	if db.inserts == nil {
		db.inserts = map[int]*sql.Stmt{}
	}
	db.inserts[rows] = st
	return st, nil
}

// classify marks err as ErrUnavailable unless the database refused the data.
func (db *DB) classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if db.d.refused(err) || errors.Is(err, errNoRequestID) {
		return fmt.Errorf("ledger: %s refused the records: %w", db.d.name, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, db.d.name, err)
}

var errNoRequestID = errors.New("record without a request ID")

// where renders f as a WHERE clause whose parameters are numbered after
// args, and returns args with its own.
func (db *DB) where(f Filter, args []any) (string, []any) {
	var conds []string
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, cond+" "+db.d.param(len(args)))
	}
	if !f.From.IsZero() {
		add("usage_records.occurred_at >=", db.d.timeValue(f.From.UTC().Truncate(time.Microsecond)))
	}
	if !f.To.IsZero() {
		add("usage_records.occurred_at <", db.d.timeValue(f.To.UTC().Truncate(time.Microsecond)))
	}
	if f.RequestID != "" {
		add("usage_records.request_id =", f.RequestID)
	}
	if f.Tenant != "" {
		add("usage_records.tenant =", f.Tenant)
	}
	if f.App != "" {
		add("usage_records.app =", f.App)
	}
	if f.Model != "" {
		add("usage_records.model =", f.Model)
	}
	if f.Session != "" {
		add("usage_records.session_id =", f.Session)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Tags)) {
		args = append(args, k, f.Tags[k])
		conds = append(conds, "EXISTS (SELECT 1 FROM usage_tags ft WHERE ft.request_id = usage_records.request_id AND ft.tag_key = "+
			db.d.param(len(args)-1)+" AND ft.tag_value = "+db.d.param(len(args))+")")
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// totalsSQL sums the Totals; the casts keep PostgreSQL from widening the
// sums to numeric.
const totalsSQL = `COUNT(*),
	CAST(COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS BIGINT),
	CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(cached_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(cost_micro_usd), 0) AS BIGINT),
	CAST(COALESCE(SUM(saved_micro_usd), 0) AS BIGINT)`

// Query implements [Ledger.Query]. A tag dimension joins each record to
// its row of that tag, if any (usage_tags holds at most one per request
// and key), so no record is counted twice.
func (db *DB) Query(ctx context.Context, f Filter, by ...Dimension) ([]Row, error) {
	cols := make([]string, len(by))
	var (
		join string
		args []any
	)
	for i, d := range by {
		if slices.Contains(by[:i], d) {
			return nil, fmt.Errorf("ledger: dimension %q given twice", string(d))
		}
		if key := d.TagKey(); key != "" {
			if join != "" {
				return nil, fmt.Errorf("ledger: one tag dimension at a time, not %q and another", string(d))
			}
			args = append(args, key)
			join = " LEFT JOIN usage_tags tg ON tg.request_id = usage_records.request_id AND tg.tag_key = " + db.d.param(len(args))
			cols[i] = "COALESCE(tg.tag_value, '')"
			continue
		}
		c, err := d.column()
		if err != nil {
			return nil, err
		}
		cols[i] = "usage_records." + c
	}
	where, args := db.where(f, args)
	q := "SELECT " + totalsSQL + " FROM usage_records" + where
	if len(cols) > 0 {
		list := strings.Join(cols, ", ")
		q = "SELECT " + list + ", " + totalsSQL + " FROM usage_records" + join + where + " GROUP BY " + list + " ORDER BY " + list
	}
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.classify(err)
	}
	defer rows.Close()
	out := []Row{}
	for rows.Next() {
		var r Row
		dest := make([]any, 0, len(by)+7)
		for _, d := range by {
			dest = append(dest, r.field(d))
		}
		t := &r.Totals
		dest = append(dest, &t.Requests, &t.Errors, &t.InputTokens, &t.OutputTokens, &t.CachedTokens, &t.CostMicros, &t.SavedMicros)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.classify(err)
	}
	return out, nil
}

// Records implements [Ledger.Records]. Rows come out as they were stored,
// normalised; requests with the same time come in request ID order.
func (db *DB) Records(ctx context.Context, f Filter) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		where, args := db.where(f, nil)
		rows, err := db.db.QueryContext(ctx, "SELECT "+strings.Join(insertColumns, ", ")+
			" FROM usage_records"+where+" ORDER BY occurred_at, request_id", args...)
		if err != nil {
			yield(Record{}, db.classify(err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRecord(rows)
			if !yield(r, err) || err != nil {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(Record{}, db.classify(err))
		}
	}
}

func scanRecord(rows *sql.Rows) (Record, error) {
	var (
		r                       Record
		at                      dbTime
		model, reasons, tags    string
		attempts, status        int64
		latencyUS, firstTokenUS int64
	)
	err := rows.Scan(&r.RequestID, &at, &r.Tenant, &r.App, &r.KeyName, &r.Route,
		&r.RequestedModel, &r.ServedModel, &r.Provider, &model, &r.Stream, &attempts,
		&reasons, &r.InputTokens, &r.OutputTokens, &r.CachedTokens, &r.CostMicros,
		&latencyUS, &firstTokenUS, &status, &r.ErrorType, &r.CacheHit, &r.UsageEstimated,
		&r.StrongCostMicros, &r.SavedMicros, &r.PriceSource, &r.TraceID, &r.RouteReason, &tags, &r.SessionID,
		&r.Domain, &r.RoutingScore)
	if err != nil {
		return Record{}, err
	}
	if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
		return Record{}, fmt.Errorf("ledger: record %s: tags: %w", r.RequestID, err)
	}
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	if err := json.Unmarshal([]byte(reasons), &r.FallbackReasons); err != nil {
		return Record{}, fmt.Errorf("ledger: record %s: fallback_reasons: %w", r.RequestID, err)
	}
	if len(r.FallbackReasons) == 0 {
		r.FallbackReasons = nil
	}
	r.Time = time.Time(at)
	r.Attempts, r.Status = int(attempts), int(status)
	r.Latency = time.Duration(latencyUS) * time.Microsecond
	r.TimeToFirstToken = time.Duration(firstTokenUS) * time.Microsecond
	return r, nil
}

// dbTime scans a time as either engine holds it: Unix microseconds from
// SQLite, a timestamp from PostgreSQL.
type dbTime time.Time

// Scan implements [sql.Scanner].
func (t *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*t = dbTime(time.UnixMicro(v).UTC())
	case time.Time:
		*t = dbTime(v.UTC())
	default:
		return fmt.Errorf("ledger: cannot scan %T as a time", src)
	}
	return nil
}

// Ping implements [Ledger.Ping].
func (db *DB) Ping(ctx context.Context) error { return db.classify(db.db.PingContext(ctx)) }

// Close implements [Ledger.Close].
func (db *DB) Close() error {
	db.mu.Lock()
	for _, st := range db.inserts {
		st.Close()
	}
	if db.insertTag != nil {
		db.insertTag.Close()
	}
	db.inserts, db.insertTag = nil, nil
	db.mu.Unlock()
	return db.db.Close()
}

var _ Ledger = (*DB)(nil)
