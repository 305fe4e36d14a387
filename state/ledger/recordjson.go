package ledger

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/state/spool"
)

// appendJSON appends the record as encoding/json encodes the struct (the
// spools' format, which json.Unmarshal reads back), written out field by
// field: with reflection it was a tenth of the usage filter's cost on
// every request, which spools each record it holds. Where encoding/json
// fails it does not: a RoutingScore that is not a number is written 0 (as
// the ledger stores it). TestRecordJSON holds it to encoding/json's form.
func (r *Record) appendJSON(b []byte) []byte {
	key := func(name string) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
	}
	str := func(name, v string) { key(name); b = jsonform.AppendString(b, v) }
	num := func(name string, v int64) { key(name); b = strconv.AppendInt(b, v, 10) }
	flag := func(name string, v bool) { key(name); b = strconv.AppendBool(b, v) }
	b = append(b, `{"RequestID":`...)
	b = jsonform.AppendString(b, r.RequestID)
	b = append(b, `,"Time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	str("Tenant", r.Tenant)
	str("App", r.App)
	str("KeyName", r.KeyName)
	str("Route", r.Route)
	str("RequestedModel", r.RequestedModel)
	str("ServedModel", r.ServedModel)
	str("Provider", r.Provider)
	flag("Stream", r.Stream)
	num("Attempts", int64(r.Attempts))
	key("FallbackReasons")
	b = appendJSONStrings(b, r.FallbackReasons)
	num("InputTokens", r.InputTokens)
	num("OutputTokens", r.OutputTokens)
	num("CachedTokens", r.CachedTokens)
	num("CostMicros", r.CostMicros)
	num("StrongCostMicros", r.StrongCostMicros)
	num("Latency", int64(r.Latency))
	num("TimeToFirstToken", int64(r.TimeToFirstToken))
	num("Status", int64(r.Status))
	str("ErrorType", r.ErrorType)
	num("SavedMicros", r.SavedMicros)
	flag("CacheHit", r.CacheHit)
	flag("UsageEstimated", r.UsageEstimated)
	str("PriceSource", r.PriceSource)
	str("TraceID", r.TraceID)
	str("RouteReason", r.RouteReason)
	key("Tags")
	b = appendJSONTags(b, r.Tags)
	str("SessionID", r.SessionID)
	str("Domain", r.Domain)
	key("RoutingScore")
	score := r.RoutingScore
	if math.IsNaN(score) || math.IsInf(score, 0) {
		score = 0
	}
	b = strconv.AppendFloat(b, score, 'g', -1, 64)
	return append(b, '}')
}

// spoolFrameSize is room for a usual record spooled: the spool's header
// ([spool.Frame]), then the record's JSON, about 700 bytes.
const spoolFrameSize = spool.HeaderLen + 1024

// appendJSONStrings appends ss as a JSON array, null when nil.
func appendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonform.AppendString(b, s)
	}
	return append(b, ']')
}

// appendJSONTags appends tags as a JSON object, keys sorted as
// encoding/json sorts them; null when nil.
func appendJSONTags(b []byte, tags map[string]string) []byte {
	if tags == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonform.AppendString(b, k)
		b = append(b, ':')
		b = jsonform.AppendString(b, tags[k])
	}
	return append(b, '}')
}
