// Package layout holds no code: its test keeps the walls between the
// project's packages where the README's Layout table puts them.
package layout
