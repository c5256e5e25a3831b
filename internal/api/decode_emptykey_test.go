package api

import "testing"

// An unknown empty key is named below its object (spec.), as before paths were built with Path,
// not as the object itself (spec).
func TestDecodeUnknownEmptyKeyField(t *testing.T) {
	var v struct {
		Spec struct {
			A int `json:"a"`
		} `json:"spec"`
	}
	e, ok := AsError(DecodeStrict([]byte(`{"spec":{"":1}}`), &v))
	if !ok || e.Code != CodeUnknownField || e.Field != "spec." {
		t.Errorf("got %+v, want %s at spec.", e, CodeUnknownField)
	}
}
