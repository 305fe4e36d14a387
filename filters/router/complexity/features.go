package complexity

import (
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Features is the feature vector of one request, in the order of
// FeatureNames. Counts enter as log(1+n): the tenth code block says less
// than the first.
type Features [NumFeatures]float64

// Feature indices; FeatureNames gives their stable names, which a model
// file must list in this order.
const (
	fChars = iota
	fWords
	fSentences
	fNumbers
	fNumberDensity
	fMathSymbols
	fQuestions
	fCodeBlocks
	fWordLength
	fLines
	fMultiStep
	fSequence
	fQuant
	fCode
	fConstraint
	fLogic
	fExpert
	fOpenEnded
	fTurns
	fContextChars
	fSystemChars
	fTools
	// NumFeatures is the length of a feature vector.
	NumFeatures
)

var featureNames = [NumFeatures]string{
	fChars:         "log_chars",
	fWords:         "log_words",
	fSentences:     "log_sentences",
	fNumbers:       "log_numbers",
	fNumberDensity: "number_density",
	fMathSymbols:   "log_math_symbols",
	fQuestions:     "log_question_marks",
	fCodeBlocks:    "log_code_blocks",
	fWordLength:    "mean_word_length",
	fLines:         "log_lines",
	fMultiStep:     "log_multi_step_markers",
	fSequence:      "log_sequence_markers",
	fQuant:         "log_quantity_markers",
	fCode:          "log_code_markers",
	fConstraint:    "log_constraint_markers",
	fLogic:         "log_logic_markers",
	fExpert:        "log_expert_markers",
	fOpenEnded:     "log_open_ended_markers",
	fTurns:         "log_turns",
	fContextChars:  "log_context_chars",
	fSystemChars:   "log_system_chars",
	fTools:         "log_tools",
}

// FeatureNames returns the names of the features, in vector order.
func FeatureNames() []string { return featureNames[:] }

// markers is built on first use: the automaton is shared, read-only state.
var markers = sync.OnceValue(func() *matcher { return newMatcher(markerTable) })

// DefaultMaxScanBytes bounds the bytes of the task message that are read
// character by character; the rest counts towards length only.
const DefaultMaxScanBytes = 4 << 10

// Extract computes the feature vector of r, reading at most maxScan bytes of
// the task message (maxScan ≤ 0 means DefaultMaxScanBytes). The task is the
// last user message; earlier messages count as conversation context.
func Extract(r *Request, maxScan int) Features {
	var f Features
	if maxScan <= 0 {
		maxScan = DefaultMaxScanBytes
	}
	task := -1
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			task = i
			break
		}
	}
	if task < 0 && len(r.Messages) > 0 {
		task = len(r.Messages) - 1
	}
	var turns, context, system int
	for i, m := range r.Messages {
		switch {
		case i == task:
		case m.Role == "system" || m.Role == "developer":
			system += len(m.Text)
		default:
			turns++
			context += len(m.Text)
		}
	}
	f[fTurns] = log1p(turns)
	f[fContextChars] = log1p(context)
	f[fSystemChars] = log1p(system)
	f[fTools] = log1p(r.Tools)
	if task < 0 {
		return f
	}

	text := r.Messages[task].Text
	scan := text
	if len(scan) > maxScan {
		scan = scan[:maxScan]
	}
	c := countText(scan)
	var groups [numGroups]int
	markers().count(scan, &groups)

	// Counts from a cut text are scaled up to the whole, so a long prompt
	// keeps its proportions instead of looking short.
	scale := float64(len(text)) / float64(max(len(scan), 1))
	words := (float64(c.words) + float64(c.cjk)/2) * scale
	numbers := float64(c.numbers) * scale
	f[fChars] = math.Log1p(float64(utf8.RuneCountInString(scan)) * scale)
	f[fWords] = math.Log1p(words)
	f[fSentences] = math.Log1p(float64(c.sentences) * scale)
	f[fNumbers] = math.Log1p(numbers)
	f[fNumberDensity] = numbers / (words + 5)
	f[fMathSymbols] = math.Log1p(float64(c.math) * scale)
	f[fQuestions] = log1p(c.questions)
	f[fCodeBlocks] = log1p((c.fences + 1) / 2)
	if c.words > 0 {
		f[fWordLength] = math.Min(float64(c.letters)/float64(c.words), 12)
	}
	f[fLines] = math.Log1p(float64(c.lines) * scale)
	for g := range numGroups {
		f[fMultiStep+int(g)] = log1p(groups[g])
	}
	return f
}

func log1p(n int) float64 { return math.Log1p(float64(n)) }

// textCounts are the character-level counts of one pass over a text.
type textCounts struct {
	words, letters, cjk, numbers, sentences, math, questions, fences, lines int
}

func countText(s string) textCounts {
	var c textCounts
	inWord, inNumber := false, false
	backticks := 0
	for i := 0; i < len(s); {
		b := s[i]
		size := 1
		letter, digit := false, false
		if b < utf8.RuneSelf {
			letter = 'a' <= b|0x20 && b|0x20 <= 'z'
			digit = '0' <= b && b <= '9'
			switch b {
			case '=', '+', '*', '/', '^', '<', '>', '%', '$':
				c.math++
			case '?':
				c.questions++
				c.sentences += endsSentence(s, i+1)
			case '.', '!':
				c.sentences += endsSentence(s, i+1)
			case '\n':
				c.lines++
			}
			if b == '`' {
				backticks++
				if backticks == 3 {
					c.fences++
				}
			} else {
				backticks = 0
			}
		} else {
			backticks = 0
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			switch {
			case isCJK(r):
				c.cjk++
			case r == '？':
				c.questions++
				c.sentences++
			case r == '。' || r == '！':
				c.sentences++
			case r == '×' || r == '÷' || r == '√' || r == '∑' || r == '∫' || r == 'π' ||
				r == '≤' || r == '≥' || r == '≠' || r == '−' || r == '²' || r == '³':
				c.math++
			default:
				letter = unicode.IsLetter(r)
			}
		}
		switch {
		case letter:
			if !inWord {
				c.words++
			}
			c.letters++
			inWord, inNumber = true, false
		case digit:
			// "3.5" and "1,000" are one number; a digit glued to letters
			// ("x2", "H2O") is part of a word, not a quantity.
			continued := i > 1 && (s[i-1] == '.' || s[i-1] == ',') && '0' <= s[i-2] && s[i-2] <= '9'
			if !inNumber && !inWord && !continued {
				c.numbers++
			}
			inNumber = true
		default:
			inWord, inNumber = false, false
		}
		i += size
	}
	if c.sentences == 0 && c.words+c.cjk > 0 {
		c.sentences = 1
	}
	return c
}

// endsSentence reports (as 0 or 1) whether a terminator just before i ends
// a sentence: it must be followed by white space or the end of the text,
// so "3.5" and "e.g." inside a sentence do not count.
func endsSentence(s string, i int) int {
	if i >= len(s) || s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r' {
		return 1
	}
	return 0
}

// isCJK reports whether r is a Han, kana or Hangul character: scripts
// written without spaces, where each character carries about half a word.
func isCJK(r rune) bool {
	return 0x4e00 <= r && r <= 0x9fff || 0x3400 <= r && r <= 0x4dbf ||
		0x3040 <= r && r <= 0x30ff || 0xac00 <= r && r <= 0xd7af
}
