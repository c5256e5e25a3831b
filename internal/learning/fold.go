package learning

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Fold is text as the risky-rule check reads it: compatibility-decomposed (NFKD: fullwidth and
// mathematical letters become plain ones, ligatures split, accents come apart), without combining
// marks and invisible format characters (zero-width spaces and joiners, bidi controls), each
// Cyrillic or Greek letter that looks like a Latin one replaced by it, lowercased; and, after it,
// each run of four or more single letters spaced apart ("n e v e r") joined into a word. So
// "Аlwаys" written with Cyrillic А and а, "ａｌｗａｙｓ" and "al\u200bways" all read "always".
func Fold(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if l, ok := confusables[r]; ok {
			r = l
		}
		b.WriteRune(unicode.ToLower(r))
	}
	folded := b.String()
	if joined := joinSpaced(folded); joined != "" {
		folded += "\n" + joined
	}
	return folded
}

// joinSpaced is each run of four or more single letters separated by one non-letter each
// ("n e v e r", "a.s.k.i.n.g"), joined, one per line ("" when there is none).
func joinSpaced(s string) string {
	rs := []rune(s)
	alone := func(i int) bool {
		return i < len(rs) && unicode.IsLetter(rs[i]) && (i == 0 || !unicode.IsLetter(rs[i-1])) && (i+1 == len(rs) || !unicode.IsLetter(rs[i+1]))
	}
	var out []string
	for i := 0; i < len(rs); i++ {
		if !alone(i) {
			continue
		}
		word := []rune{rs[i]}
		for i+2 < len(rs) && rs[i+1] != '\n' && alone(i+2) {
			word = append(word, rs[i+2])
			i += 2
		}
		if len(word) >= 4 {
			out = append(out, string(word))
		}
	}
	return strings.Join(out, "\n")
}

// confusables maps the Cyrillic and Greek letters that look like Latin ones (Unicode's
// confusables data, the letters of those two scripts a reader cannot tell from Latin in common
// fonts) to the Latin letter, plus the dotless i, the long s NFKD leaves, and the apostrophes
// that stand for "'". A short table, not the whole confusables file: these scripts are where
// look-alike words come from in practice, and the rule words it guards are Latin.
var confusables = map[rune]rune{
	// Cyrillic
	'а': 'a', 'А': 'a', 'в': 'b', 'В': 'b', 'с': 'c', 'С': 'c', 'ԁ': 'd', 'е': 'e', 'Е': 'e', 'ё': 'e',
	'һ': 'h', 'Н': 'h', 'н': 'h', 'і': 'i', 'І': 'i', 'ї': 'i', 'ј': 'j', 'Ј': 'j', 'к': 'k', 'К': 'k',
	'ӏ': 'l', 'Ӏ': 'l', 'м': 'm', 'М': 'm', 'о': 'o', 'О': 'o', 'р': 'p', 'Р': 'p', 'ԛ': 'q', 'Ԛ': 'q',
	'ѕ': 's', 'Ѕ': 's', 'т': 't', 'Т': 't', 'у': 'y', 'У': 'y', 'ү': 'y', 'ԝ': 'w', 'Ԝ': 'w', 'х': 'x',
	'Х': 'x', 'ь': 'b', 'п': 'n', 'г': 'r', 'ɡ': 'g', 'Ү': 'y',
	// Greek
	'α': 'a', 'Α': 'a', 'β': 'b', 'Β': 'b', 'ε': 'e', 'Ε': 'e', 'η': 'n', 'Η': 'h', 'ι': 'i', 'Ι': 'i',
	'κ': 'k', 'Κ': 'k', 'Μ': 'm', 'ν': 'v', 'Ν': 'n', 'ο': 'o', 'Ο': 'o', 'ρ': 'p', 'Ρ': 'p', 'τ': 't',
	'Τ': 't', 'υ': 'u', 'Υ': 'y', 'χ': 'x', 'Χ': 'x', 'Ζ': 'z', 'ϲ': 'c', 'Ϲ': 'c', 'ϳ': 'j', 'ω': 'w',
	// Latin look-alikes NFKD keeps
	'ı': 'i', 'ſ': 's', 'ɑ': 'a', 'ℓ': 'l',
	// apostrophes
	'’': '\'', '‘': '\'', 'ʼ': '\'', '′': '\'',
}
