package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/state/ledger"
)

// SignatureHeader carries a webhook call's signature: "t=<unix seconds>,
// v1=<hex HMAC-SHA256 of "<t>.<body>" under the shared secret>". The time
// inside the signed text lets a receiver refuse a replayed call.
const SignatureHeader = "X-Switchyard-Signature"

// Webhook posts events to a URL as {"events": [...]}, one call per batch.
type Webhook struct {
	url    string
	secret []byte
	client *http.Client
	now    func() time.Time
}

// NewWebhook posts to url, signing with secret; one call may take timeout.
// It does not follow redirects: a webhook that moved is a configuration to
// fix, not a place to send usage data blindly.
func NewWebhook(url string, secret []byte, timeout time.Duration) *Webhook {
	return &Webhook{url: url, secret: secret, now: time.Now, client: &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Publish implements [Target]. A network error, a timeout, 408, 429 or a
// 5xx is [ledger.ErrUnavailable] (retried with backoff); any other answer
// but a 2xx refuses the batch.
func (w *Webhook) Publish(ctx context.Context, msgs []Message) (int, error) {
	var body bytes.Buffer
	body.WriteString(`{"events":[`)
	for i, m := range msgs {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(m.JSON)
	}
	body.WriteString("]}")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body.Bytes()))
	if err != nil {
		return 0, fmt.Errorf("events webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "switchyard-events")
	req.Header.Set(SignatureHeader, Sign(w.secret, w.now().Unix(), body.Bytes()))
	resp, err := w.client.Do(req)
	if err != nil {
		// The URL may hold a token in its query: say only what failed.
		var ue interface{ Timeout() bool }
		if errors.As(err, &ue) && ue.Timeout() {
			return 0, fmt.Errorf("%w: events webhook: timed out", ledger.ErrUnavailable)
		}
		return 0, fmt.Errorf("%w: events webhook: %v", ledger.ErrUnavailable, errors.Unwrap(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return len(msgs), nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return 0, fmt.Errorf("%w: events webhook: status %d", ledger.ErrUnavailable, c)
	default:
		return 0, fmt.Errorf("events webhook: refused with status %d", c)
	}
}

// Sign is the signature header's value for body sent at unix time t.
func Sign(secret []byte, t int64, body []byte) string {
	ts := strconv.FormatInt(t, 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a signature header against body, as a receiver does: the
// MAC must match and its time be within tolerance of now.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return errors.New("events: malformed signature header")
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("events: signature time %s outside the tolerance", time.Unix(t, 0).UTC())
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, ts, body)) {
		return errors.New("events: signature does not match")
	}
	return nil
}
