package redact

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// Kinds of sensitive data the detector finds.
const (
	SensitiveCard     = "card_number"
	SensitiveEmail    = "email"
	SensitivePhone    = "phone"
	SensitiveNationID = "national_id"
	SensitiveSecret   = "secret"
	// SensitiveUnscanned is text too long to scan: taken as sensitive,
	// as the detector errs on the side of finding.
	SensitiveUnscanned = "unscanned"
)

// MaxScanBytes bounds the text Scan reads: the patterns cost about a
// second of CPU per 2 MiB, and the text is the client's.
const MaxScanBytes = 256 << 10

// Scan reads text in windows, overlapping by more than any pattern's
// match, and stops when ctx ends (the client or Envoy gave up).
const (
	scanWindow  = 32 << 10
	scanOverlap = 256
)

var (
	cardRE  = regexp.MustCompile(`\b(?:\d[ -]?){12,18}\d\b`)
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)
	// A phone number needs an international prefix or the grouping people
	// write, so that arithmetic and years are not mistaken for one.
	phoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}\b)|(?:\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}\b)|(?:\b\d{3}[.-]\d{3}[.-]\d{4}\b)`)
	// US SSN, and China's 18-character resident ID (checked below).
	ssnRE  = regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`)
	cnIDRE = regexp.MustCompile(`\b\d{17}[\dXx]\b`)
	// Credentials of common providers and private keys.
	secretRE = regexp.MustCompile(`(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,})|(?:AKIA[0-9A-Z]{16})|(?:gh[pousr]_[A-Za-z0-9]{30,})|(?:xox[abprs]-[A-Za-z0-9-]{10,})|(?:AIza[0-9A-Za-z_-]{35})|(?:-----BEGIN [A-Z ]*PRIVATE KEY-----)`)
)

// Detect returns the first kind of sensitive data found in text,
// or "". It errs on the side of finding: a false positive sends a request
// to a self-hosted model, a miss sends personal data to a third party.
func Detect(text string) string {
	switch {
	case secretRE.MatchString(text):
		return SensitiveSecret
	case emailRE.MatchString(text):
		return SensitiveEmail
	case ssnRE.MatchString(text) || chineseID(text):
		return SensitiveNationID
	case card(text):
		return SensitiveCard
	case phoneRE.MatchString(text):
		return SensitivePhone
	}
	return ""
}

// Scan is Detect for a client's text: longer than MaxScanBytes it is
// SensitiveUnscanned without being read, and the work stops with ctx's
// error once ctx ends.
func Scan(ctx context.Context, text string) (string, error) {
	if len(text) > MaxScanBytes {
		return SensitiveUnscanned, nil
	}
	for start := 0; start < len(text); start += scanWindow {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if kind := Detect(text[start:min(len(text), start+scanWindow+scanOverlap)]); kind != "" {
			return kind, nil
		}
	}
	return "", nil
}

// Mask replaces each piece of sensitive data Detect would find
// with its kind in brackets ("[email]"), for records that keep text. Card
// numbers and national IDs are masked only when their check digits hold,
// as Detect finds them.
func Mask(text string) string {
	return replace(text, AllKinds, func(kind, _ string) string { return "[" + kind + "]" })
}

// AllKinds are the kinds of sensitive data that can be masked, in the order
// they are looked for: a credential is masked before the e-mail address
// or digits inside it could be.
var AllKinds = []string{SensitiveSecret, SensitiveEmail, SensitiveNationID, SensitiveCard, SensitivePhone}

// replace replaces each span of the kinds in text that Detect would find
// by what with gives for it.
func replace(text string, kinds []string, with func(kind, span string) string) string {
	for _, k := range AllKinds {
		if !slices.Contains(kinds, k) {
			continue
		}
		switch k {
		case SensitiveSecret:
			text = secretRE.ReplaceAllStringFunc(text, func(m string) string { return with(k, m) })
		case SensitiveEmail:
			text = emailRE.ReplaceAllStringFunc(text, func(m string) string { return with(k, m) })
		case SensitiveNationID:
			text = ssnRE.ReplaceAllStringFunc(text, func(m string) string { return with(k, m) })
			text = cnIDRE.ReplaceAllStringFunc(text, func(m string) string {
				if chineseID(m) {
					return with(k, m)
				}
				return m
			})
		case SensitiveCard:
			text = cardRE.ReplaceAllStringFunc(text, func(m string) string {
				if card(m) {
					return with(k, m)
				}
				return m
			})
		case SensitivePhone:
			text = phoneRE.ReplaceAllStringFunc(text, func(m string) string { return with(k, m) })
		}
	}
	return text
}

// card finds a 13–19 digit run that passes the Luhn check.
func card(text string) bool {
	for _, m := range cardRE.FindAllString(text, -1) {
		digits := strings.NewReplacer(" ", "", "-", "").Replace(m)
		if len(digits) >= 13 && len(digits) <= 19 && luhn(digits) {
			return true
		}
	}
	return false
}

func luhn(digits string) bool {
	sum, double := 0, false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// chineseID finds an 18-character resident ID whose check digit is right.
func chineseID(text string) bool {
	weights := [17]int{7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2}
	const check = "10X98765432"
	for _, m := range cnIDRE.FindAllString(text, -1) {
		sum := 0
		for i := range 17 {
			sum += int(m[i]-'0') * weights[i]
		}
		if strings.ToUpper(m[17:]) == string(check[sum%11]) {
			return true
		}
	}
	return false
}
