package jsonform

import (
	"errors"
	"slices"
	"testing"
)

func TestOneOrMany(t *testing.T) {
	upper := func(s string) string { return "<" + s + ">" }
	for _, tt := range []struct {
		in      string
		want    []string
		wantErr error // nil: none; ErrShape, or any other error (errAny)
	}{
		{in: `"hi"`, want: []string{"<hi>"}},
		{in: " \"a\\u0062\" ", want: []string{"<ab>"}},
		{in: `["x","y"]`, want: []string{"x", "y"}},
		{in: `[]`, want: []string{}},
		{in: `null`, wantErr: ErrShape},
		{in: ``, wantErr: ErrShape},
		{in: `{"a":1}`, wantErr: ErrShape},
		{in: `42`, wantErr: ErrShape},
		{in: `[1]`, wantErr: errAny},
	} {
		got, err := OneOrMany([]byte(tt.in), upper)
		switch {
		case tt.wantErr == nil && err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case tt.wantErr == ErrShape && !errors.Is(err, ErrShape):
			t.Errorf("%s: error %v, want ErrShape", tt.in, err)
		case tt.wantErr == errAny && (err == nil || errors.Is(err, ErrShape)):
			t.Errorf("%s: error %v, want a decoding error", tt.in, err)
		case tt.wantErr == nil && !slices.Equal(got, tt.want):
			t.Errorf("%s: %q, want %q", tt.in, got, tt.want)
		}
	}
}

var errAny = errors.New("any decoding error")
