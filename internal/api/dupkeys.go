package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CheckDuplicateKeys refuses a JSON value in which an object names a key twice, with an error
// naming the duplicated key's path ("metadata.name", "spec.tools[1].name"). Text that is not valid
// JSON passes: the decoder that follows reports it.
func CheckDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dupValue(dec, ""); err != nil {
		if e, ok := AsError(err); ok {
			return e
		}
		return nil
	}
	return nil
}

// dupValue reads one value from dec; it returns an *Error for a duplicate, or the decoder's error.
func dupValue(dec *json.Decoder, path string) error {
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
			p := keyPath(path, k)
			if seen[k] {
				return E(CodeDuplicateKey, p, "key %q appears more than once in %s", k, orRoot(path))
			}
			seen[k] = true
			if err := dupValue(dec, p); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := dupValue(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
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
