package consolespec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the console filter: the console works on its own session
// and shares nothing through the Exchange, so it declares no uses.
var Decl = filterspec.Decl{
	Name:  "console",
	Order: 60,
}
