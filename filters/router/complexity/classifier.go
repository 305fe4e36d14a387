package complexity

import "fmt"

// Message is one chat message as the classifier reads it.
type Message struct {
	// Role is system, developer, user, assistant or tool.
	Role string
	// Text is the message's text content.
	Text string
}

// Request is what the classifier sees of a chat request.
type Request struct {
	Messages []Message
	// Tools is the number of tools the request offers the model.
	Tools int
}

// Level is the coarse class routing rules match on.
type Level int

// Levels, from easiest to hardest.
const (
	Simple Level = iota
	Medium
	Complex
)

var levelNames = [...]string{Simple: "simple", Medium: "medium", Complex: "complex"}

// String returns the level's name as written in YAML.
func (l Level) String() string {
	if l < Simple || l > Complex {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// MarshalText implements encoding.TextMarshaler.
func (l Level) MarshalText() ([]byte, error) {
	if l < Simple || l > Complex {
		return nil, fmt.Errorf("complexity: invalid level %d", int(l))
	}
	return []byte(levelNames[l]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, so YAML rules can say
// `complexity: complex`.
func (l *Level) UnmarshalText(b []byte) error {
	for i, name := range levelNames {
		if string(b) == name {
			*l = Level(i)
			return nil
		}
	}
	return fmt.Errorf("complexity: unknown level %q, want simple, medium or complex", b)
}

// Classifier scores request complexity. It is immutable after New and safe
// for concurrent use.
type Classifier struct {
	model     *Model
	mediumAt  float64
	complexAt float64
	maxScan   int
}

// New returns a classifier for cfg, with the built-in model unless
// cfg.Model is set.
func New(cfg Config) (*Classifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := cfg.Model
	if m == nil {
		var err error
		if m, err = DefaultModel(); err != nil {
			return nil, err
		}
	}
	markers() // build the automaton now, not on the first request
	return &Classifier{model: m, mediumAt: cfg.MediumAt, complexAt: cfg.ComplexAt, maxScan: cfg.MaxScanBytes}, nil
}

// Score returns r's complexity in [0, 1]: the share of typical traffic
// that is easier than r (see README.md). Equal requests get equal scores.
func (c *Classifier) Score(r *Request) float64 {
	if r == nil {
		r = &Request{}
	}
	f := Extract(r, c.maxScan)
	return c.model.Calibrate(c.model.Raw(&f))
}

// Level classes a score with the configured thresholds.
func (c *Classifier) Level(score float64) Level { return LevelAt(score, c.mediumAt, c.complexAt) }

// LevelAt classes a score with the given thresholds (a route calibrated
// on its traffic has its own).
func LevelAt(score, mediumAt, complexAt float64) Level {
	switch {
	case score >= complexAt:
		return Complex
	case score >= mediumAt:
		return Medium
	default:
		return Simple
	}
}
