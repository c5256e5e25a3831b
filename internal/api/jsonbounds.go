package api

import "fmt"

// Bounds on the shape of every JSON body the server reads, checked before anything decodes it:
// a decoder's work and memory grow with nesting (one frame per level, and a path per level in
// the duplicate-key scan), so a 100 KB body of "[" must be refused, not walked. The workflow
// validator holds documents to the same depth and value count.
const (
	// MaxJSONDepth is how deeply a body may nest objects and arrays.
	MaxJSONDepth = 128
	// MaxJSONKeys is how many object keys a body may hold in all.
	MaxJSONKeys = 100000
)

// CheckJSONBounds refuses a body that nests deeper than MaxJSONDepth or holds more than
// MaxJSONKeys keys, with a PayloadTooLarge naming the limit and where (line:column) it was
// passed. It reads the bytes once and allocates nothing; text that is not valid JSON passes when
// it stays within the bounds (the decoder that follows reports it).
func CheckJSONBounds(data []byte) error { return scanJSONBounds(data, MaxJSONKeys) }

// CheckJSONDepth is CheckJSONBounds without the key bound, for bodies that are passed on rather
// than scanned for keys (a model request through the gateway may hold a long conversation's
// many keys): what it bounds is the nesting a decoder walks.
func CheckJSONDepth(data []byte) error { return scanJSONBounds(data, 0) }

// scanJSONBounds is the one scan; maxKeys 0 does not count keys.
func scanJSONBounds(data []byte, maxKeys int) error {
	depth, keys := 0, 0
	inString, escaped := false, false
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxJSONDepth {
				return boundsErr(data, i, fmt.Sprintf("the body nests objects and arrays deeper than %d levels (MaxJSONDepth)", MaxJSONDepth))
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ':':
			keys++
			if maxKeys > 0 && keys > maxKeys {
				return boundsErr(data, i, fmt.Sprintf("the body holds more than %d object keys (MaxJSONKeys)", maxKeys))
			}
		}
	}
	return nil
}

func boundsErr(data []byte, off int, msg string) *Error {
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return E(CodeTooLarge, "", "%s, at line %d column %d", msg, line, col)
}
