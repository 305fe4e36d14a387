package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// consoleShots, when set, is where TestConsole writes a screenshot of each
// page (make console-screenshots: docs/console).
var consoleShots = flag.String("console-screenshots", "", "directory TestConsole writes its page screenshots to")

// chromium is the browser the console's tests drive: Debian's, installed
// by make deps.
const chromium = "/usr/bin/chromium"

// browser is a headless Chromium on one tab, which accepts every
// confirmation dialog and remembers it, and the errors its pages log.
type browser struct {
	t   *testing.T
	ctx context.Context
	url string

	mu      sync.Mutex
	dialogs []string
	errs    []string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	path := chromium
	if p := os.Getenv("SWITCHYARD_CHROMIUM"); p != "" {
		path = p
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("the console's browser tests need Chromium at %s: run make deps (apt-get install chromium), or set SWITCHYARD_CHROMIUM", path)
	}
	// The flags keep Chromium off the network it would reach at start
	// (updates, sync, Google's services): the console needs none.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true), chromedp.Flag("no-pings", true),
	)...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, url: base}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	entries := chromedp.Events(ctx, log.EntryAdded)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	go func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			// A page's own status is the test's to check; anything else
			// (a script error, a Content-Security-Policy violation) is a
			// defect.
			if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
				b.mu.Lock()
				b.errs = append(b.errs, string(ev.Entry.Source)+": "+ev.Entry.Text+" "+ev.Entry.URL)
				b.mu.Unlock()
			}
		}
	}()
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.errs = append(b.errs, "exception: "+ev.ExceptionDetails.Text)
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs steps, failing the test on an error.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open loads a console page and returns its HTTP status.
func (b *browser) open(path string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.url+path))
	if err != nil {
		b.t.Fatalf("opening %s: %v", path, err)
	}
	return resp.Status
}

// submit clicks the button sel (a form's) and waits for the page the form
// answers with; it returns its HTTP status.
func (b *browser) submit(sel string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("submitting %s: %v", sel, err)
	}
	return resp.Status
}

// text is the text of the element sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// eval evaluates a JavaScript expression in the page.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// attr is attribute name of the element sel, "" when it has none.
func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	return b.eval(fmt.Sprintf(`(document.querySelector(%q)?.getAttribute(%q)) ?? ""`, sel, name))
}

// until reloads path until cond holds of the page, for state that
// changes behind it (a policy reload).
func (b *browser) until(path, what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.open(path)
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: %s never happened", path, what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// shot saves the page as name.png in -console-screenshots, if set.
func (b *browser) shot(name string) {
	b.t.Helper()
	if *consoleShots == "" {
		return
	}
	// Background refreshes are stopped so the picture is the page as
	// loaded, and charts are drawn without animation anyway.
	b.eval(`document.querySelectorAll('[hx-trigger]').forEach(e => e.removeAttribute('hx-trigger')), ""`)
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(*consoleShots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*consoleShots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// stored is everything the console's origin keeps in the browser's
// storage.
func (b *browser) stored() string {
	b.t.Helper()
	return b.eval(`JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`)
}

func (b *browser) confirmed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// consoleOptions is configs/local with its chat route routed
// automatically, so the Routing page has a route to show.
func consoleOptions(t *testing.T) stack.Options {
	t.Helper()
	root, err := stack.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	auto := strings.Replace(string(routes), "      strategy: cost-optimized\n", "      strategy: cost-optimized\n      auto: {strong_share_max: 0.3}\n", 1)
	if auto == string(routes) {
		t.Fatal("configs/local/routes.yaml has no chat route to route automatically")
	}
	o := defaultOptions()
	o.Overlay = map[string]string{"routes.yaml": auto}
	return o
}

// chat sends one chat request with key and returns its error.
func chat(s *stack.Stack, key, model string) error {
	c := client(s, key)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Explain the difference between a mutex and a semaphore, with an example.")},
	})
	return err
}

func statusOf(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// TestConsole drives the console in Debian's Chromium, as an operator
// would on day one: sign in with the admin key; issue a key and use it,
// revoke it and see it refused; bring a provider down with the drill and
// see its state change; send requests and see spend and the charts move,
// and find a failed request's attempts; see a refused policy edit with its
// error. No page may log an error (a Content-Security-Policy violation
// among them).
func TestConsole(t *testing.T) {
	s := startStack(t, consoleOptions(t))
	b := newBrowser(t, s.URL)

	t.Run("sign in", func(t *testing.T) {
		b.t = t
		b.open("/console")
		if loc := b.eval(`location.pathname`); loc != "/console/login" {
			t.Fatalf("a browser without a session is at %s, want the sign-in page", loc)
		}
		b.shot("login")
		b.do(chromedp.SendKeys(chromedp.CSS("#key"), "sk-wrong"))
		if st := b.submit(`form[action="/console/login"] button`); st != 401 || !strings.Contains(b.text("#error"), "not the admin key") {
			t.Fatalf("a wrong key: %d %q", st, b.text("#error"))
		}
		b.do(chromedp.SendKeys(chromedp.CSS("#key"), adminKey))
		if st := b.submit(`form[action="/console/login"] button`); st != 200 {
			t.Fatalf("signing in: %d", st)
		}
		if loc := b.eval(`location.pathname`); loc != "/console/overview" {
			t.Fatalf("signed in at %s, want the overview", loc)
		}
		if c := b.eval(`document.cookie`); c != "" {
			t.Errorf("script reads a cookie: %q; the session cookie must be HttpOnly", c)
		}
		if stored := b.stored(); strings.Contains(stored, adminKey) {
			t.Errorf("the browser holds the admin key: %s", stored)
		}
	})

	t.Run("spend and charts move", func(t *testing.T) {
		b.t = t
		b.open("/console/overview")
		before := b.text("#total-requests")
		chartBefore := b.eval(`String(Chart.getChart('chart-requests').data.datasets.reduce((n, d) => n + d.data.reduce((a, v) => a + v, 0), 0))`)
		for _, m := range []string{"gpt-4o-mini", "claude-3-5-haiku", "gemini-2.0-flash", "gpt-4o", "auto", "auto"} {
			if err := chat(s, demoKey, m); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
		}
		// The team tenant's hourly slot is $0.05/24: two long prompts to
		// the priciest model fill it.
		for range 2 {
			c := client(s, "sk-local-team")
			if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "claude-3-5-sonnet", MaxTokens: openai.Int(100),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarise: " + strings.Repeat("the budget of the team ", 100))},
			}); err != nil {
				t.Fatalf("team: %v", err)
			}
		}
		// A request whose first provider fails is served by the next; one
		// whose every provider fails is refused, each failure on record.
		if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultStatus, Status: 503, Count: 1}); err != nil {
			t.Fatal(err)
		}
		if err := chat(s, demoKey, "gpt-4o-mini"); err != nil {
			t.Fatalf("a fallback: %v", err)
		}
		for _, p := range []string{"openai", "anthropic", "gemini"} {
			if err := s.Sim.SetFault(p, providersim.Fault{Mode: providersim.FaultStatus, Status: 503, Count: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := chat(s, demoKey, "gpt-4o-mini"); statusOf(err) != 503 {
			t.Fatalf("every provider failing: %v, want 503", err)
		}

		b.open("/console/overview")
		after := b.text("#total-requests")
		chartAfter := b.eval(`String(Chart.getChart('chart-requests').data.datasets.reduce((n, d) => n + d.data.reduce((a, v) => a + v, 0), 0))`)
		n0, _ := strconv.Atoi(before)
		n1, _ := strconv.Atoi(after)
		if n1 < n0+10 || chartAfter == chartBefore || chartAfter != after {
			t.Errorf("requests %s -> %s, drawn %s -> %s: want ten more, drawn as counted", before, after, chartBefore, chartAfter)
		}
		if spend := b.text("#total-spend"); spend == "$0.000000" {
			t.Errorf("spend %s after paid requests", spend)
		}
		if e := b.text("#total-errors"); e == "0" {
			t.Error("no error counted after a failed request")
		}
		if legend := b.eval(`Chart.getChart('chart-spend').data.datasets.map(d => d.label).join(",")`); !strings.Contains(legend, "demo") || !strings.Contains(legend, "team") {
			t.Errorf("spend drawn for %q, want demo and team", legend)
		}
		b.shot("overview")
		b.open("/console/overview?window=day&by=model")
		if legend := b.eval(`Chart.getChart('chart-requests').data.datasets.map(d => d.label).join(",")`); !strings.Contains(legend, "gpt-4o-mini") {
			t.Errorf("requests by model drawn for %q", legend)
		}
	})

	t.Run("a failed request's attempts", func(t *testing.T) {
		b.t = t
		b.open("/console/requests")
		if n := b.eval(`String(document.querySelectorAll('#requests tbody tr[data-request]').length)`); n != "10" {
			t.Errorf("%s requests listed, want the ten sent", n)
		}
		b.shot("requests")
		b.do(chromedp.SetValue(chromedp.CSS(`#filters select[name="status"]`), "5xx"))
		if st := b.submit(`#filters button`); st != 200 {
			t.Fatalf("filtering: %d", st)
		}
		if n := b.eval(`String(document.querySelectorAll('#requests tbody tr[data-request]').length)`); n != "1" {
			t.Errorf("%s requests failed with 5xx, want the one", n)
		}
		id := b.attr(`#requests tbody tr[data-status="503"]`, "data-request")
		if id == "" {
			t.Fatal("the failed request is not listed")
		}
		b.open("/console/requests/" + id)
		rows := b.eval(`[...document.querySelectorAll('#attempts tbody tr')].map(r => r.innerText.replace(/\s+/g, ' ').trim()).join("\n")`)
		for _, p := range []string{"openai", "anthropic", "gemini"} {
			if !strings.Contains(rows, p) {
				t.Errorf("attempts:\n%s\nlack %s", rows, p)
			}
		}
		if !strings.Contains(rows, "503 provider: error") || !strings.HasPrefix(b.text("#blame"), "provider") {
			t.Errorf("attempts:\n%s\nblame %q: want each failure the provider's", rows, b.text("#blame"))
		}
		if why := b.text("#route-reason"); why == "—" || why == "" {
			t.Error("the request's page does not say why it went where it did")
		}
		b.shot("request")
	})

	t.Run("issue, use and revoke a key", func(t *testing.T) {
		b.t = t
		b.open("/console/tenants")
		slot := `#tenant-team > .bars [data-label="this hour's slot of the daily budget"]`
		if level := b.attr(slot, "data-level"); level != "amber" && level != "red" {
			t.Errorf("the team's hourly slot after its spend: %q (%s), want amber or red", level, b.text(slot))
		}
		b.do(chromedp.SendKeys(chromedp.CSS(`form.issue[data-tenant="demo"] input[name="name"]`), "browser-key"))
		if st := b.submit(`form.issue[data-tenant="demo"] button`); st != 200 {
			t.Fatalf("issuing: %d", st)
		}
		secret := b.text("#secret")
		if !strings.HasPrefix(secret, "sk-sy-") {
			t.Fatalf("the new key's secret: %q", secret)
		}
		if err := chat(s, secret, "gpt-4o-mini"); err != nil {
			t.Fatalf("the new key: %v", err)
		}
		b.open("/console/tenants")
		if body := b.eval(`document.body.innerHTML`); strings.Contains(body, secret) {
			t.Fatal("the secret is shown again")
		}
		if stored := b.stored(); strings.Contains(stored, secret) {
			t.Errorf("the browser keeps the secret: %s", stored)
		}
		if state := b.attr(`tr[data-key="browser-key"]`, "data-state"); state != "live" {
			t.Fatalf("the key is listed as %q", state)
		}
		if st := b.submit(`tr[data-key="browser-key"] form[action="/console/keys/revoke"] button`); st != 200 {
			t.Fatalf("revoking: %d", st)
		}
		if d := b.confirmed(); len(d) == 0 || !strings.Contains(d[len(d)-1], "Revoke key browser-key") {
			t.Errorf("no confirmation before revoking: %q", d)
		}
		if err := chat(s, secret, "gpt-4o-mini"); statusOf(err) != 401 {
			t.Fatalf("the revoked key: %v, want 401", err)
		}
		if state := b.attr(`tr[data-key="browser-key"]`, "data-state"); state != "revoked" {
			t.Fatalf("the revoked key is listed as %q", state)
		}
		b.shot("tenants")
	})

	t.Run("drill a provider down and up", func(t *testing.T) {
		b.t = t
		b.open("/console/providers")
		if st := b.attr(`#provider-openai`, "data-state"); st != "healthy" {
			t.Fatalf("openai is %q before the drill", st)
		}
		if st := b.submit(`#provider-openai form button`); st != 200 {
			t.Fatalf("drill: %d", st)
		}
		if d := b.confirmed(); !strings.Contains(d[len(d)-1], "Bring openai down") {
			t.Errorf("no confirmation before the drill: %q", d)
		}
		if st, drill := b.attr(`#provider-openai`, "data-state"), b.attr(`#provider-openai`, "data-drill"); st != "unavailable" || drill != "true" {
			t.Fatalf("openai after the drill: %s, drill %s", st, drill)
		}
		b.shot("providers")
		b.open("/console/overview")
		if st := b.attr(`#provider-strip [data-provider="openai"]`, "data-state"); st != "unavailable" {
			t.Errorf("the overview's strip shows openai %q during the drill", st)
		}
		b.open("/console/providers")
		if st := b.submit(`#provider-openai form button`); st != 200 || b.attr(`#provider-openai`, "data-drill") != "false" {
			t.Fatalf("bringing openai up: %d, drill %s", st, b.attr(`#provider-openai`, "data-drill"))
		}
	})

	t.Run("routing", func(t *testing.T) {
		b.t = t
		b.open("/console/routing")
		if share := b.text(`#route-chat .share`); share != "30.0%" {
			t.Errorf("the chat route's strong share: %q, want 30.0%%", share)
		}
		b.shot("routing")
	})

	t.Run("a refused policy edit", func(t *testing.T) {
		b.t = t
		routes, err := s.ReadPolicyFile("routes.yaml")
		if err != nil {
			t.Fatal(err)
		}
		broken := strings.Replace(string(routes), "api: console", "api: dashboard", 1)
		if err := s.WritePolicyFile("routes.yaml", []byte(broken)); err != nil {
			t.Fatal(err)
		}
		b.until("/console/policy", "the refusal", func() bool { return b.attr("#refused", "class") == "refused pending" })
		if errs := b.text("#refused .errors"); !strings.Contains(errs, "routes.yaml:") || !strings.Contains(errs, `got "dashboard"`) {
			t.Errorf("the refusal says %q, want the file:line and the reason", errs)
		}
		b.shot("policy")
		if err := s.WritePolicyFile("routes.yaml", routes); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("sign out", func(t *testing.T) {
		b.t = t
		b.open("/console/overview")
		b.submit(`form[action="/console/logout"] button`)
		b.open("/console/tenants")
		if loc := b.eval(`location.pathname`); loc != "/console/login" {
			t.Fatalf("after signing out the console shows %s", loc)
		}
	})

	b.t = t
	if errs := b.pageErrors(); len(errs) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(errs, "\n"))
	}
}
