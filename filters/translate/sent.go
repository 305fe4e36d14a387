package translate

import (
	"time"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/readback"
)

// record notes in s what one piece of translated stream tells about the
// answer: when its first generated content went out, the generated text,
// and an error event, whichever API's events the client gets. A
// translator that says what it emitted (translator.Reporter) is asked;
// any other's output is read back.
func record(s *filters.Sent, tr translator.Translator, out []byte, now func() time.Time) {
	before := len(s.Text)
	var errorType string
	if r, ok := tr.(translator.Reporter); ok {
		s.Text, errorType = r.Sent(s.Text)
	} else {
		s.Text, errorType = readback.Chunk(s.Text, out)
	}
	if errorType != "" {
		s.ErrorType = errorType
	}
	if len(s.Text) > before && s.FirstToken.IsZero() {
		s.FirstToken = now()
	}
}
