package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// usageCases are usage objects as providers send them and as they could:
// readUsage must read each exactly as encoding/json.Unmarshal does.
var usageCases = []string{
	`{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}`,
	`{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3,"accepted_prediction_tokens":0}}`,
	`{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_cache_hit_tokens":6,"prompt_cache_miss_tokens":4}`,
	`{"prompt_tokens":null,"prompt_tokens_details":null,"prompt_cache_hit_tokens":null}`,
	`{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":{"cache_write_tokens":2}}`,
	`{"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":null}`,
	`{"prompt_cache_hit_tokens":3,"prompt_cache_hit_tokens":null}`,
	`{"Prompt_Tokens":4,"COMPLETION_TOKENS":1,"prompt_tokens":9}`,
	`{"pr\u006fmpt_tokens":4}`,
	`{"prompt_tokenſ":4}`,
	`{"prompt_tokens":-0,"completion_tokens":-7}`,
	`{"prompt_tokens":9223372036854775807,"completion_tokens":-9223372036854775808}`,
	`{"prompt_tokens":9223372036854775808}`,
	`{"prompt_tokens":18446744073709551616}`,
	`{"prompt_tokens":1.0}`,
	`{"prompt_tokens":1e3}`,
	`{"prompt_tokens":"12"}`,
	`{"prompt_tokens":true}`,
	`{"prompt_tokens":{}}`,
	`{"prompt_tokens_details":[]}`,
	`{"prompt_tokens_details":{"cached_tokens":"5"}}`,
	`{"completion_tokens_details":7}`,
	`{"x_extra":{"prompt_tokens":99,"nested":[1,{"a":"b"}]},"total_tokens":3}`,
	`{"a_key_longer_than_any_name_the_gateway_knows_at_all":1,"total_tokens":3}`,
	` { "prompt_tokens" : 2 , "total_tokens" : 3 } `,
	`{}`,
}

func TestReadUsageReadsAsEncodingJSON(t *testing.T) {
	for _, c := range usageCases {
		if !json.Valid([]byte(c)) {
			t.Fatalf("case %s is not valid JSON", c)
		}
		checkUsage(t, []byte(c))
	}
}

// FuzzReadUsage: on any valid JSON object, readUsage and
// encoding/json.Unmarshal agree.
func FuzzReadUsage(f *testing.F) {
	for _, c := range usageCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || len(raw) == 0 || raw[skipSpace(raw, 0)] != '{' {
			return
		}
		checkUsage(t, raw)
	})
}

func checkUsage(t *testing.T, raw []byte) {
	t.Helper()
	var want usageFields
	wantOK := json.Unmarshal(raw, &want) == nil
	got, ok := readUsage(raw)
	if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
		t.Errorf("%s: readUsage = %+v, %v; encoding/json = %+v, %v", raw, got, ok, want, wantOK)
	}
}

// BenchmarkReadUsage: readUsage against the encoding/json.Unmarshal it
// replaced, on OpenAI's usage object with its details.
func BenchmarkReadUsage(b *testing.B) {
	raw := []byte(usageCases[1])
	b.Run("readUsage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := readUsage(raw); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var u usageFields
			if json.Unmarshal(raw, &u) != nil {
				b.Fatal("not read")
			}
		}
	})
}
