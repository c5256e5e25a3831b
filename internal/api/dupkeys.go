package api

import (
	"bytes"
	"encoding/json"
)

// CheckDuplicateKeys refuses a JSON value in which an object names a key twice, with an error
// naming the duplicated key's path ("metadata.name", "spec.tools[1].name"), and a body beyond
// CheckJSONBounds' limits. Text that is not valid JSON passes: the decoder that follows reports it.
func CheckDuplicateKeys(data []byte) error {
	if err := CheckJSONBounds(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var s dupScan
	if err := s.value(dec); err != nil {
		if e, ok := AsError(err); ok {
			return e
		}
		return nil
	}
	return nil
}

// dupScan walks one value; where it is is a stack of steps (a key or an index), made into a path
// string only for the error: a path per level would cost the square of the depth.
type dupScan struct{ at []dupStep }

type dupStep struct {
	key   string
	index int // -1 for a key
}

func (s *dupScan) path() string {
	p := ""
	for _, st := range s.at {
		if st.index >= 0 {
			p = NewPath(p).Index(st.index).String()
		} else {
			p = keyPath(p, st.key)
		}
	}
	return p
}

// value reads one value from dec; it returns an *Error for a duplicate, or the decoder's error.
func (s *dupScan) value(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if seen[k] {
				in := orRoot(s.path())
				s.at = append(s.at, dupStep{key: k, index: -1})
				return E(CodeDuplicateKey, s.path(), "key %q appears more than once in %s", k, in)
			}
			seen[k] = true
			s.at = append(s.at, dupStep{key: k, index: -1})
			if err := s.value(dec); err != nil {
				return err
			}
			s.at = s.at[:len(s.at)-1]
		}
	case '[':
		for i := 0; dec.More(); i++ {
			s.at = append(s.at, dupStep{index: i})
			if err := s.value(dec); err != nil {
				return err
			}
			s.at = s.at[:len(s.at)-1]
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// keyPath is path.key, or path["key"] for a key that is not a plain name (a label such as
// "../x" or "app.kubernetes.io/name").
func keyPath(path, k string) string {
	plain := k != ""
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			plain = false
			break
		}
	}
	if plain {
		return join(path, k)
	}
	q, _ := json.Marshal(k)
	return path + "[" + string(q) + "]"
}
