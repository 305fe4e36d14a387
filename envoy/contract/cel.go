package contract

import (
	"fmt"
	"strconv"
	"strings"

	celexpr "cel.dev/expr"
)

// FirstAttemptTranslated is the CEL condition under which the per-attempt
// ext_proc filter is skipped: the first attempt, going to the cluster the
// router-level reply translated it for ([TranslatedForKey]). Any other
// attempt, or a first one Envoy sent elsewhere, goes through the
// per-attempt filter, which translates it afresh or refuses it: no
// request leaves untranslated. Envoy 1.40's CEL matcher takes only a
// parsed expression, so it is built here; [Render] spells it.
func FirstAttemptTranslated() *celexpr.ParsedExpr {
	var b celBuilder
	translatedFor := b.call("_[_]", b.call("_[_]", b.sel(b.ident("metadata"), "filter_metadata"), b.str(RouteMetadataNamespace)), b.str(TranslatedForKey))
	return &celexpr.ParsedExpr{Expr: b.call("_&&_",
		b.call("_==_", b.sel(b.ident("upstream"), "request_attempt_count"), b.uint(1)),
		b.call("_==_", b.sel(b.ident("xds"), "cluster_name"), translatedFor),
	)}
}

// celBuilder numbers the nodes of an expression, as a parser would.
type celBuilder struct{ id int64 }

func (b *celBuilder) next() int64 { b.id++; return b.id }

func (b *celBuilder) ident(name string) *celexpr.Expr {
	return &celexpr.Expr{Id: b.next(), ExprKind: &celexpr.Expr_IdentExpr{IdentExpr: &celexpr.Expr_Ident{Name: name}}}
}

func (b *celBuilder) sel(operand *celexpr.Expr, field string) *celexpr.Expr {
	return &celexpr.Expr{Id: b.next(), ExprKind: &celexpr.Expr_SelectExpr{SelectExpr: &celexpr.Expr_Select{Operand: operand, Field: field}}}
}

func (b *celBuilder) call(fn string, args ...*celexpr.Expr) *celexpr.Expr {
	return &celexpr.Expr{Id: b.next(), ExprKind: &celexpr.Expr_CallExpr{CallExpr: &celexpr.Expr_Call{Function: fn, Args: args}}}
}

func (b *celBuilder) str(v string) *celexpr.Expr {
	return &celexpr.Expr{Id: b.next(), ExprKind: &celexpr.Expr_ConstExpr{ConstExpr: &celexpr.Constant{ConstantKind: &celexpr.Constant_StringValue{StringValue: v}}}}
}

func (b *celBuilder) uint(v uint64) *celexpr.Expr {
	return &celexpr.Expr{Id: b.next(), ExprKind: &celexpr.Expr_ConstExpr{ConstExpr: &celexpr.Constant{ConstantKind: &celexpr.Constant_Uint64Value{Uint64Value: v}}}}
}

// Render spells an expression of the kinds built here in CEL's syntax.
func Render(e *celexpr.Expr) string {
	switch k := e.GetExprKind().(type) {
	case *celexpr.Expr_IdentExpr:
		return k.IdentExpr.GetName()
	case *celexpr.Expr_SelectExpr:
		return Render(k.SelectExpr.GetOperand()) + "." + k.SelectExpr.GetField()
	case *celexpr.Expr_ConstExpr:
		switch c := k.ConstExpr.GetConstantKind().(type) {
		case *celexpr.Constant_StringValue:
			return strconv.Quote(c.StringValue)
		case *celexpr.Constant_Uint64Value:
			return strconv.FormatUint(c.Uint64Value, 10) + "u"
		}
	case *celexpr.Expr_CallExpr:
		args := k.CallExpr.GetArgs()
		switch fn := k.CallExpr.GetFunction(); {
		case fn == "_[_]" && len(args) == 2:
			return Render(args[0]) + "[" + Render(args[1]) + "]"
		case strings.HasPrefix(fn, "_") && strings.HasSuffix(fn, "_") && len(args) == 2:
			return Render(args[0]) + " " + strings.Trim(fn, "_") + " " + Render(args[1])
		}
	}
	return fmt.Sprintf("<%T>", e.GetExprKind())
}
