package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/translate"
	"github.com/switchyard/switchyard/translator"
)

// A hybrid answer (the route's hybrid mode) is one request sent to every
// target of its plan at once, one answer kept. Envoy's router forwards a
// request to one upstream at a time and its mirrors' answers are
// discarded, so it cannot wait for several answers and compare them:
// ext_proc makes the calls itself, each one an attempt of the request
// (translated, keyed, observed by the health monitor, charged), and
// answers the client with the one it kept.

// HeaderHybrid tells the client of a hybrid answer which model's answer
// was kept, how, and how many answers it was picked from.
const HeaderHybrid = "x-switchyard-hybrid"

// maxLegBody bounds what ext_proc reads of one target's whole answer.
const maxLegBody = 16 << 20

// leg is one target's call of a hybrid request.
type leg struct {
	a *filters.Attempt
	// result is the answer translated into the client's API.
	result translator.Result
	usage  filters.Usage
	// acceptable: a whole answer that finished of itself.
	acceptable bool
	err        error
}

// hybrid runs x's hybrid request to its end: every target called, one
// answer picked, the request answered and accounted.
func (s *Server) hybrid(ctx context.Context, lv *live) *extprocv3.ProcessingResponse {
	x := lv.x
	if lv.extend != nil {
		// Envoy would give up on this message long before the answers came.
		lv.extend(x.Route.AnswerTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, x.Route.AnswerTimeout)
	defer cancel()
	legs := make([]*leg, 0, len(x.Plan))
	for i := range x.Plan {
		a, _ := x.NewAttempt(i+1, s.now())
		if _, err := s.translated(ctx, lv, a, x.Header); err != nil {
			// A target that cannot take the request (a capability its
			// translator refuses) is no answer; the others may be.
			legs = append(legs, &leg{a: a, err: err})
			continue
		}
		legs = append(legs, &leg{a: a})
	}
	done := make(chan *leg, len(legs))
	calls, cancels := 0, make([]context.CancelFunc, len(legs))
	for i, l := range legs {
		if l.err != nil {
			continue
		}
		lctx, lcancel := context.WithCancel(ctx)
		cancels[i] = lcancel
		calls++
		go func() { done <- s.call(lctx, l) }()
	}
	for ; calls > 0; calls-- {
		l := <-done
		s.settleLeg(ctx, lv, l)
		if x.Hybrid.Pick == policy.PickFirst && l.acceptable {
			x.Hybrid.Picked = l.a.N
			calls--
			break
		}
	}
	for _, c := range cancels {
		if c != nil {
			c()
		}
	}
	// The calls still under way end at once, cancelled; one whose answer
	// came all the same is an answer not picked.
	for ; calls > 0; calls-- {
		if l := <-done; l.err == nil {
			s.settleLeg(ctx, lv, l)
		}
	}
	if x.Hybrid.Picked != 0 {
		s.cancelled(ctx, lv, legs)
	}
	if x.Hybrid.Picked == 0 {
		x.Hybrid.Picked = s.pick(ctx, lv, legs)
	}
	return s.hybridAnswer(ctx, lv, legs)
}

// call sends leg l's translated request to its provider and reads the
// whole answer.
func (s *Server) call(ctx context.Context, l *leg) *leg {
	a := l.a
	p := a.Target.Provider()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Scheme+"://"+p.Authority()+a.Upstream.Path, bytes.NewReader(a.Upstream.Body))
	if err != nil {
		l.err = err
		return l
	}
	for _, h := range a.Upstream.Header {
		req.Header.Set(h.Key, h.Value)
	}
	req.Header.Set("accept-encoding", "identity")
	a.MarkSent(s.now())
	resp, err := s.legClient.Do(req)
	if err != nil {
		l.err = err
		return l
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLegBody+1))
	if err == nil && len(body) > maxLegBody {
		err = fmt.Errorf("answer above %d bytes", maxLegBody)
	}
	if err != nil {
		l.err = err
		return l
	}
	var hdrs filters.Headers
	for k, vs := range resp.Header {
		for _, v := range vs {
			hdrs = append(hdrs, filters.Header{Key: strings.ToLower(k), Value: v})
		}
	}
	a.Finish(filters.Outcome{Status: resp.StatusCode, Header: hdrs, Latency: s.now().Sub(a.SentAt())})
	l.result = a.Translator.Complete(resp.StatusCode, hdrs, body)
	if u, ok := a.Translator.Usage(); ok {
		l.usage = filters.Usage{Known: true, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.Cached(),
			WebSearches: u.ServerToolUse.WebSearchRequests}
		l.usage.CostMicros = translate.Cost(a.Target.Model, l.usage)
	}
	l.acceptable = l.result.Status == http.StatusOK && filters.Acceptable(l.result.Body)
	return l
}

// settleLeg records how leg l's call ended, for the health monitor and
// the ledger: a call that got no answer failed as an attempt does,
// unless the request itself ended (the client left, the answer timeout).
func (s *Server) settleLeg(ctx context.Context, lv *live, l *leg) {
	if l.err == nil {
		lv.chain.AttemptDone(context.WithoutCancel(ctx), lv.x, l.a)
		return
	}
	o := filters.Outcome{Cause: filters.CauseConnect, Failure: "no response: " + withoutURL(l.err), Latency: s.now().Sub(sentOrStarted(l.a))}
	if errors.Is(l.err, context.DeadlineExceeded) || ctx.Err() != nil {
		o.Cause, o.Failure = filters.CauseExcused, "no response before the request ended"
	}
	s.settle(ctx, lv, l.a, o)
}

// withoutURL is a call's error without the URL net/http puts in it (a
// URL may carry a query the operator set).
func withoutURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// cancelled settles the legs still under way when pick first kept an
// answer: they lost the race, cancelled, and may still bill.
func (s *Server) cancelled(ctx context.Context, lv *live, legs []*leg) {
	for _, l := range legs {
		if l.a.Outcome().Done {
			continue
		}
		s.settle(ctx, lv, l.a, filters.Outcome{Cause: filters.CauseHedged, Latency: s.now().Sub(sentOrStarted(l.a)),
			Failure: "hybrid: cancelled once attempt " + strconv.Itoa(lv.x.Hybrid.Picked) + " answered"})
	}
}

// pick keeps one acceptable answer once every leg ended: the cheapest, or
// the one the judge says is best (the cheapest when the judge cannot
// say). 0 when none is acceptable.
func (s *Server) pick(ctx context.Context, lv *live, legs []*leg) int {
	var ok []*leg
	for _, l := range legs {
		if l.acceptable {
			ok = append(ok, l)
		}
	}
	if len(ok) == 0 {
		return 0
	}
	cheapest := slices.MinFunc(ok, func(a, b *leg) int { return cmp.Compare(a.usage.CostMicros, b.usage.CostMicros) })
	if lv.x.Hybrid.Pick != policy.PickJudge || len(ok) == 1 {
		return cheapest.a.N
	}
	if k, judged := s.judge(ctx, lv, ok); judged {
		return ok[k-1].a.N
	}
	return cheapest.a.N
}

// judge asks the route's judge which of the acceptable answers is best,
// as one more attempt of the request: its call is translated for the
// judge's provider, keyed and charged like the others. It returns the
// 1-based choice among ok.
func (s *Server) judge(ctx context.Context, lv *live, ok []*leg) (int, bool) {
	x := lv.x
	answers := make([][]byte, len(ok))
	for i, l := range ok {
		answers[i] = l.result.Body
	}
	j := x.Hybrid.Judge
	req := filters.JudgeRequest(j.Name, x.Chat.Messages, answers)
	body, err := json.Marshal(req)
	if err != nil {
		return 0, false
	}
	x.Plan = append(x.Plan, filters.Target{Model: j})
	a, _ := x.NewAttempt(len(x.Plan), s.now())
	x.Hybrid.Judged = a.N
	// The attempt hooks translate the request's own chat request: for the
	// judge's call they see the judging request instead, for as long as
	// it takes to translate it.
	chat, raw := x.Chat, x.Body
	x.Chat, x.Body = req, body
	_, terr := s.translated(ctx, lv, a, x.Header)
	x.Chat, x.Body = chat, raw
	if terr != nil {
		return 0, false
	}
	l := s.call(ctx, &leg{a: a})
	s.settleLeg(ctx, lv, l)
	x.Hybrid.JudgeMicros = l.usage.CostMicros
	if !l.acceptable {
		return 0, false
	}
	return filters.ParseBest(filters.AnswerText(l.result.Body), len(ok))
}

// hybridAnswer answers the client with the picked leg's answer, priced
// at what every call cost. Without an acceptable answer, the first whole
// answer (cut at its length, say) is the client's, else the first
// refusal of the request itself (a 4xx), else a 503 naming each call.
func (s *Server) hybridAnswer(ctx context.Context, lv *live, legs []*leg) *extprocv3.ProcessingResponse {
	x := lv.x
	var kept *leg
	for _, l := range legs {
		if l.a.N == x.Hybrid.Picked {
			kept = l
		}
	}
	for _, want := range []func(*leg) bool{
		func(l *leg) bool { return l.err == nil && l.result.Status == http.StatusOK },
		func(l *leg) bool { return l.err == nil && l.result.Status >= 400 && l.result.Status < 500 },
	} {
		for _, l := range legs {
			if kept == nil && want(l) {
				kept = l
			}
		}
	}
	u := filters.Usage{Known: true, CostMicros: x.Hybrid.JudgeMicros}
	for _, l := range legs {
		u.PromptTokens += l.usage.PromptTokens
		u.CompletionTokens += l.usage.CompletionTokens
		u.CachedTokens += l.usage.CachedTokens
		u.CostMicros += l.usage.CostMicros
	}
	if kept != nil {
		x.SetAnswered(kept.a.N)
	}
	if lost := translate.LostMicros(x, keptUsage(kept)); lost > 0 {
		u.HedgedMicros, u.CostMicros, u.Estimated = lost, u.CostMicros+lost, true
	}
	x.Usage = u
	now := s.now()
	if kept == nil {
		parts := make([]string, len(legs))
		for i, l := range legs {
			parts[i] = fmt.Sprintf("%s/%s: %s", l.a.Target.Provider().Name, l.a.Target.Model.Name, legFailure(l))
		}
		e := openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "all_providers_failed",
			"no model of the hybrid answered: %s", strings.Join(parts, "; "))
		x.Response.Status = e.Status
		return errorResponse(x.ID, e, x)
	}
	x.Response.Status = kept.result.Status
	x.Sent.Complete, x.Sent.FirstToken = true, now
	m := kept.a.Target.Model
	hdrs := append([]filters.Header{
		{Key: filters.HeaderModel, Value: m.Name},
		{Key: filters.HeaderProvider, Value: m.Provider.Name},
		{Key: HeaderHybrid, Value: fmt.Sprintf("picked=%s; by=%s; answers=%d/%d", m.Name, x.Hybrid.Pick, answered(legs), len(legs))},
	}, kept.result.Header...)
	lv.chain.Complete(ctx, x)
	return replyResponse(x.ID, &filters.Reply{Status: kept.result.Status, Body: kept.result.Body, Header: hdrs})
}

func keptUsage(l *leg) filters.Usage {
	if l == nil {
		return filters.Usage{}
	}
	return l.usage
}

// answered counts the legs whose answer was acceptable.
func answered(legs []*leg) int {
	n := 0
	for _, l := range legs {
		if l.acceptable {
			n++
		}
	}
	return n
}

// legFailure says how a leg with no answer for the client ended.
func legFailure(l *leg) string {
	switch o := l.a.Outcome(); {
	case l.err != nil && o.Status == 0 && o.Failure != "":
		return o.Failure
	case l.err != nil:
		return filters.AsError(l.err, "").Message
	default:
		return strconv.Itoa(l.result.Status) + " " + http.StatusText(l.result.Status)
	}
}

// legTimeout is how long an idle pooled connection of the legs' client
// stays open.
const legTimeout = 90 * time.Second

// newLegClient is the client hybrid calls go out with: no redirect is
// followed (the provider's answer itself counts), bodies are read whole.
func newLegClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = legTimeout
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
