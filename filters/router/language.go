package router

import "unicode"

// DetectLanguage names the main language of text by its script: the
// languages a rule can name (policy.languages). Text in Latin script is
// "en"; a rule that must tell Latin-script languages apart needs a topic
// list instead. Japanese is told from Chinese by its kana.
func DetectLanguage(text string) string {
	var han, kana, hangul, cyrillic, arabic, hebrew, devanagari, thai, greek, latin int
	for i, r := range text {
		if i > 4096 {
			break
		}
		switch {
		case r < 0x80:
			if unicode.IsLetter(r) {
				latin++
			}
		case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
			kana++
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.Is(unicode.Hangul, r):
			hangul++
		case unicode.Is(unicode.Cyrillic, r):
			cyrillic++
		case unicode.Is(unicode.Arabic, r):
			arabic++
		case unicode.Is(unicode.Hebrew, r):
			hebrew++
		case unicode.Is(unicode.Devanagari, r):
			devanagari++
		case unicode.Is(unicode.Thai, r):
			thai++
		case unicode.Is(unicode.Greek, r):
			greek++
		case unicode.IsLetter(r):
			latin++
		}
	}
	if kana > 0 && kana+han >= latin/4 {
		return "ja"
	}
	best, name := latin/4, "en" // CJK characters carry ~4 Latin letters of meaning
	for _, c := range []struct {
		n    int
		lang string
	}{{han, "zh"}, {hangul, "ko"}, {cyrillic, "ru"}, {arabic, "ar"}, {hebrew, "he"}, {devanagari, "hi"}, {thai, "th"}, {greek, "el"}} {
		n := c.n
		if c.lang != "zh" && c.lang != "ko" {
			n /= 4 // alphabets: compare letters with letters
		}
		if n > best {
			best, name = n, c.lang
		}
	}
	return name
}
