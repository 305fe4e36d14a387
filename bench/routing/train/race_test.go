//go:build race

package train

// raceEnabled skips the full retraining under the race detector, which
// slows the numeric search tenfold and finds nothing in single-threaded code.
const raceEnabled = true
