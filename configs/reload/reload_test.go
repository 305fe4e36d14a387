package reload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard/switchyard/audit"
)

func TestReporter(t *testing.T) {
	var logs, trail bytes.Buffer
	reg := prometheus.NewRegistry()
	r := New(reg, "xds", "configs/local", slog.New(slog.NewJSONHandler(&logs, nil)), audit.New(&trail, "xds"))

	want := `
# HELP switchyard_config_reloads_total Policy loads by process and result (applied, refused), the first load at start included.
# TYPE switchyard_config_reloads_total counter
switchyard_config_reloads_total{process="xds",result="applied"} %d
switchyard_config_reloads_total{process="xds",result="refused"} %d
`
	check := func(applied, refused int) {
		t.Helper()
		exp := fmt.Sprintf(want, applied, refused)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "switchyard_config_reloads_total"); err != nil {
			t.Error(err)
		}
	}
	check(0, 0)

	if got := r.Status(); got.Version != "" || got.Refused != nil {
		t.Errorf("status before any load: %+v", got)
	}
	r.Applied(context.Background(), "v1")
	r.Refused(context.Background(), errors.New("configs/local/policy.yaml:3: routes[0].path: must start with /"))
	r.Refused(context.Background(), errors.Join(errors.New("a.yaml:1: x: bad"), errors.New("b.yaml:2: y: bad")))
	check(1, 2)
	st := r.Status()
	if st.Version != "v1" || st.Applied.IsZero() || st.Refused == nil || st.Refused.At.Before(st.Applied) {
		t.Errorf("status: %+v", st)
	} else if want := []string{"a.yaml:1: x: bad", "b.yaml:2: y: bad"}; !slices.Equal(st.Refused.Errors, want) {
		t.Errorf("the last refusal's errors: %q, want %q", st.Refused.Errors, want)
	}

	for _, s := range []string{`"msg":"policy applied"`, `"version":"v1"`, `"msg":"policy refused"`, `routes[0].path: must start with /`} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("the log lacks %s:\n%s", s, logs.String())
		}
	}
	if n := strings.Count(trail.String(), `"kind":"audit"`); n != 3 {
		t.Errorf("%d audit events, want 3:\n%s", n, trail.String())
	}
	for _, s := range []string{`"result":"applied"`, `"result":"refused"`, `"dir":"configs/local"`} {
		if !strings.Contains(trail.String(), s) {
			t.Errorf("the audit trail lacks %s:\n%s", s, trail.String())
		}
	}
}
