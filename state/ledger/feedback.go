package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Rating is an app's verdict on one answer (POST /v1/feedback), or the
// judge filter's.
type Rating struct {
	RequestID string
	// Score is 0 (useless) to 1 (perfect); a thumbs up is 1, down 0.
	Score float64
	Time  time.Time
	// Judged marks the judge's verdict, kept apart from the app's.
	Judged bool
}

// Quality is the delivered quality and the savings of one route, tenant
// and served model.
type Quality struct {
	Route  string `json:"route"`
	Tenant string `json:"tenant"`
	Model  string `json:"model"`
	// Requests counts every request; Auto those whose model the router
	// chose, with their cost and what they would have cost on the route's
	// strongest model.
	Requests         int64 `json:"requests"`
	Auto             int64 `json:"auto_requests"`
	AutoCostMicros   int64 `json:"auto_cost_micro_usd"`
	StrongCostMicros int64 `json:"strong_cost_micro_usd"`
	// Ratings counts the rated requests and MeanScore averages their
	// scores (0 without ratings).
	Ratings   int64   `json:"ratings"`
	MeanScore float64 `json:"mean_score"`
	// Judged counts the requests the judge graded and MeanJudged averages
	// its scores (0 without any).
	Judged     int64   `json:"judged"`
	MeanJudged float64 `json:"mean_judged_score"`
}

// SavedMicros is what auto routing saved against sending every auto
// request to the strongest model.
func (q Quality) SavedMicros() int64 { return q.StrongCostMicros - q.AutoCostMicros }

var errBadRating = errors.New("ledger: a rating needs a request ID and a score in [0, 1]")

// ErrAlreadyRated is Rate's answer for a request rated before (by the
// app, or by the judge for a verdict): a request counts once, so that one
// request cannot be rated again and again to weigh as many.
var ErrAlreadyRated = errors.New("ledger: the request is already rated")

// Rate implements [Ledger.Rate].
func (db *DB) Rate(ctx context.Context, r Rating) error {
	if r.RequestID == "" || math.IsNaN(r.Score) || r.Score < 0 || r.Score > 1 {
		return errBadRating
	}
	table := "feedback"
	if r.Judged {
		table = "judgements"
	}
	q := "INSERT INTO " + table + " (request_id, score, rated_at) VALUES (" + db.d.param(1) + ", " + db.d.param(2) + ", " + db.d.param(3) +
		") ON CONFLICT (request_id) DO NOTHING"
	res, err := db.db.ExecContext(ctx, q, cleanText(r.RequestID), r.Score, db.d.timeValue(r.Time.UTC().Truncate(time.Microsecond)))
	if err != nil {
		return db.classify(err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrAlreadyRated
	}
	return nil
}

// Quality implements [Ledger.Quality].
func (db *DB) Quality(ctx context.Context, f Filter) ([]Quality, error) {
	where, args := db.where(f, nil)
	q := `SELECT u.route, u.tenant, u.model, COUNT(*),
	CAST(COALESCE(SUM(CASE WHEN u.strong_cost_micro_usd > 0 THEN 1 ELSE 0 END), 0) AS BIGINT),
	CAST(COALESCE(SUM(CASE WHEN u.strong_cost_micro_usd > 0 THEN u.cost_micro_usd ELSE 0 END), 0) AS BIGINT),
	CAST(COALESCE(SUM(u.strong_cost_micro_usd), 0) AS BIGINT),
	COUNT(f.request_id), COALESCE(AVG(f.score), 0), COUNT(j.request_id), COALESCE(AVG(j.score), 0)
FROM (SELECT * FROM usage_records` + where + `) u LEFT JOIN feedback f ON f.request_id = u.request_id
	LEFT JOIN judgements j ON j.request_id = u.request_id
GROUP BY u.route, u.tenant, u.model ORDER BY u.route, u.tenant, u.model`
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.classify(err)
	}
	defer rows.Close()
	out := []Quality{}
	for rows.Next() {
		var r Quality
		if err := rows.Scan(&r.Route, &r.Tenant, &r.Model, &r.Requests, &r.Auto, &r.AutoCostMicros, &r.StrongCostMicros, &r.Ratings, &r.MeanScore, &r.Judged, &r.MeanJudged); err != nil {
			return nil, fmt.Errorf("ledger: quality: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.classify(err)
	}
	return out, nil
}
