package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchyard/switchyard/state/store"
)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// Example runs the worked example of README.md on the memory store.
func Example() {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 3, 15, 13, 0, 0, 0, time.UTC)}
	s := store.NewMemory(store.Options{Clock: c})
	tenant := store.BudgetLine{Scope: store.Scope{Tenant: "acme"}, Period: store.Daily, Limit: 5_000_000}
	web := store.BudgetLine{Scope: store.Scope{Tenant: "acme", App: "web"}, Period: store.Daily, Limit: 2_000_000}
	id := func(r string) store.ReservationID { return store.ReservationID{Tenant: "acme", Request: r} }
	spend := func(r string, lines []store.BudgetLine, amount int64) {
		if err := s.Reserve(ctx, id(r), lines, amount, 5*time.Minute); err != nil {
			panic(err)
		}
		if _, err := s.Commit(ctx, id(r), amount); err != nil {
			panic(err)
		}
	}
	show := func(name string, line store.BudgetLine) {
		st, err := s.Budget(ctx, line)
		if err != nil {
			panic(err)
		}
		fmt.Println(name, "spent", st.Spent, "reserved", st.Reserved, "remaining", st.Remaining, "hour 14", st.Hourly[14])
	}

	// Earlier, at 13:00: web spent 1_900_000, other apps 1_300_000.
	spend("earlier-web", []store.BudgetLine{tenant, web}, 1_900_000)
	spend("earlier-api", []store.BudgetLine{tenant}, 1_300_000)
	c.t = c.t.Add(65 * time.Minute)
	if err := s.Reserve(ctx, id("in-flight"), []store.BudgetLine{tenant}, 100_000, 10*time.Minute); err != nil {
		panic(err)
	}

	worst := int64(1_000*3 + 4_000*15) // prompt × input price + max_tokens × output price
	if err := s.Reserve(ctx, id("req-7/1"), []store.BudgetLine{tenant, web}, worst, 5*time.Minute); err != nil {
		panic(err)
	}
	actual := int64(1_000*3 + 650*15)
	out, err := s.Commit(ctx, id("req-7/1"), actual)
	fmt.Println("reserved", worst, "committed", actual, out, err)
	show("tenant", tenant)
	show("web", web)

	err = s.Reserve(ctx, id("req-8/1"), []store.BudgetLine{tenant, web}, 100_000, 5*time.Minute)
	fmt.Println(errors.Is(err, store.ErrBudgetExceeded), err)
	show("tenant", tenant)

	// A replica reserves and crashes; five minutes later the pool has it back.
	if err := s.Reserve(ctx, id("crashed"), []store.BudgetLine{tenant}, 50_000, 5*time.Minute); err != nil {
		panic(err)
	}
	c.t = c.t.Add(5 * time.Minute)
	show("tenant", tenant)
	out, err = s.Commit(ctx, id("crashed"), 20_000)
	fmt.Println("crashed request commits later:", out, err)
	show("tenant", tenant)

	// Output:
	// reserved 63000 committed 12750 committed <nil>
	// tenant spent 3212750 reserved 100000 remaining 1687250 hour 14 12750
	// web spent 1912750 reserved 0 remaining 87250 hour 14 12750
	// true budget tenant:acme/app:web daily exceeded: 87250 of 2000000 micro-USD remaining, 100000 requested
	// tenant spent 3212750 reserved 100000 remaining 1687250 hour 14 12750
	// tenant spent 3212750 reserved 100000 remaining 1687250 hour 14 12750
	// crashed request commits later: late_commit <nil>
	// tenant spent 3232750 reserved 100000 remaining 1667250 hour 14 32750
}
