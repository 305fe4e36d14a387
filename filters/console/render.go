package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/state/ledger/report"
)

// web holds the console's pages and what they load, all served by the
// gateway itself: the page works with no network beyond it.
//
//go:embed web
var web embed.FS

// asset is one static file, named in pages by the hash of its content so
// a browser may keep it for good: a new build changes the name.
type asset struct {
	body        []byte
	contentType string
	hash        string
}

// assets are the files under web/static, by their path below it, read on
// the console's first use: a node that never shows it keeps neither the
// copies nor the system's MIME table.
var assets = sync.OnceValue(func() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(web, "web/static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".txt") {
			return err
		}
		b, err := web.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		out[strings.TrimPrefix(p, "web/static/")] = asset{body: b, contentType: ct, hash: hex.EncodeToString(sum[:6])}
		return nil
	})
	if err != nil {
		panic(err) // embedded at build time: cannot fail at run time
	}
	return out
})

// assetURL is where a page loads the static file name from.
func assetURL(name string) (string, error) {
	a, ok := assets()[name]
	if !ok {
		return "", fmt.Errorf("console: no static file %q", name)
	}
	return "/console/static/" + a.hash + "/" + name, nil
}

var funcs = template.FuncMap{
	"asset": assetURL,
	"usd":   func(micros int64) string { return "$" + report.USD(micros) },
	"money": money,
	"pct":   func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
	},
	"ms": func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64) + " ms"
	},
	"num":      thousands,
	"sum":      func(a, b int64) int64 { return a + b },
	"tabs":     func() any { return tabs },
	"statuses": func() []string { return []string{"all", "ok", "error", "4xx", "5xx"} },
	"short": func(id string) string {
		if len(id) > 8 {
			return id[:8] + "…"
		}
		return id
	},
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// money writes micro-USD for a reader: cents from a cent up, every
// digit below, where a request's cost lives.
func money(micros int64) string {
	if micros > -10_000 && micros < 10_000 {
		return "$" + report.USD(micros)
	}
	cents := (micros + 5_000) / 10_000
	if micros < 0 {
		cents = (micros - 5_000) / 10_000
	}
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return sign + "$" + thousands(cents/100) + "." + fmt.Sprintf("%02d", cents%100)
}

// thousands writes n with separators, as a reader counts.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pages are the console's templates, each with the layout around it,
// parsed on the console's first use.
var pages = sync.OnceValue(func() map[string]*template.Template {
	names, err := fs.Glob(web, "web/templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t := template.Must(template.New(base).Funcs(funcs).ParseFS(web, "web/templates/layout.html", n))
		out[strings.TrimSuffix(base, ".html")] = t
	}
	return out
})

// render executes page with data into HTML.
func render(page string, data any) ([]byte, error) {
	t := pages()[page]
	if t == nil {
		return nil, fmt.Errorf("console: no page %q", page)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
