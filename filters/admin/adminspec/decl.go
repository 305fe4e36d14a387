package adminspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the admin filter: the admin API works on its own key
// and shares nothing through the Exchange, so it declares no uses.
var Decl = filterspec.Decl{
	Name:  "admin",
	Order: 50,
}
