// Package complexity scores how hard a chat request is, so a router can send
// easy requests to a cheap model and hard ones to a strong model.
//
// The score is deterministic and needs no model server or network: it is a
// linear model over hand-built features of the request (length, words,
// numbers and math, code, question marks, tools, conversation length, and
// marker phrases for multi-step reasoning, quantities, constraints, logic
// and specialist domains in English, Chinese, Spanish, French, German and
// Japanese), calibrated so that a score s means "harder than a share s of
// typical traffic". The weights and the calibration ship in model.json,
// trained reproducibly by `go run ./bench/routing -update-model`; README.md
// explains the score, the thresholds and how the model was trained and
// evaluated.
package complexity
