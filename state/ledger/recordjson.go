package ledger

import (
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendJSON appends the record as encoding/json encodes the struct (the
// spools' format, which json.Unmarshal reads back), written out field by
// field: with reflection it was a tenth of the usage filter's cost on
// every request, which spools each record it holds. Where encoding/json
// fails it does not: a RoutingScore that is not a number is written 0 (as
// the ledger stores it). TestRecordJSON holds it to encoding/json's form.
func (r *Record) appendJSON(b []byte) []byte {
	str := func(name, v string) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = appendJSONString(b, v)
	}
	num := func(name string, v int64) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, v, 10)
	}
	flag := func(name string, v bool) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendBool(b, v)
	}
	b = append(b, `{"RequestID":`...)
	b = appendJSONString(b, r.RequestID)
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
	b = append(b, `,"FallbackReasons":`...)
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
	b = append(b, `,"Tags":`...)
	b = appendJSONTags(b, r.Tags)
	str("SessionID", r.SessionID)
	str("Domain", r.Domain)
	b = append(b, `,"RoutingScore":`...)
	score := r.RoutingScore
	if math.IsNaN(score) || math.IsInf(score, 0) {
		score = 0
	}
	b = strconv.AppendFloat(b, score, 'g', -1, 64)
	return append(b, '}')
}

// recordJSONSize is room for a usual record's JSON, about 700 bytes.
const recordJSONSize = 1024

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
		b = appendJSONString(b, s)
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
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, tags[k])
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, bytes that are not UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
