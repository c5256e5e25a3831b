package store

import (
	"encoding/json"
	"fmt"
)

// MustJSON is v's JSON text, for the backends' JSON columns. It is only given values of our own
// types, which always encode, so a failure is a programming error (and panics) rather than
// something a caller could handle.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err))
	}
	return string(b)
}
