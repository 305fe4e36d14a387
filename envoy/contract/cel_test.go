package contract

import (
	"testing"

	celexpr "cel.dev/expr"
)

func TestFirstAttemptTranslated(t *testing.T) {
	want := `upstream.request_attempt_count == 1u && xds.cluster_name == metadata.filter_metadata["switchyard.route"]["translated_for"]`
	e := FirstAttemptTranslated().GetExpr()
	if got := Render(e); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Node ids must be unique, as a parser's are.
	seen := map[int64]bool{}
	for stack := []*celexpr.Expr{e}; len(stack) > 0; {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n.GetId()] {
			t.Fatalf("node id %d used twice", n.GetId())
		}
		seen[n.GetId()] = true
		stack = append(stack, n.GetCallExpr().GetArgs()...)
		if op := n.GetSelectExpr().GetOperand(); op != nil {
			stack = append(stack, op)
		}
	}
	if len(seen) != 14 {
		t.Errorf("%d nodes, want 14", len(seen))
	}
}
