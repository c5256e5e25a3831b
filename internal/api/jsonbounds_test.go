package api

import (
	"runtime"
	"strings"
	"testing"
)

func TestCheckJSONBoundsDepth(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if err := CheckDuplicateKeys([]byte(deep(MaxJSONDepth))); err != nil {
		t.Errorf("%d levels refused: %v", MaxJSONDepth, err)
	}
	err := CheckDuplicateKeys([]byte(deep(MaxJSONDepth + 1)))
	e, ok := AsError(err)
	if !ok || e.Code != CodeTooLarge || e.Status != 413 || !strings.Contains(e.Message, "deeper than 128 levels") || !strings.Contains(e.Message, "line 1 column 129") {
		t.Errorf("%d levels: %v, want PayloadTooLarge naming the 128 levels and line 1 column 129", MaxJSONDepth+1, err)
	}
	// Objects count as levels too, and brackets inside strings do not.
	obj := strings.Repeat(`{"a":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1)
	if e, _ := AsError(CheckDuplicateKeys([]byte(obj))); e == nil || e.Code != CodeTooLarge {
		t.Errorf("%d nested objects: %v, want PayloadTooLarge", MaxJSONDepth+1, e)
	}
	str := `{"s": "` + strings.Repeat(`[{\"`, 1000) + `"}`
	if err := CheckDuplicateKeys([]byte(str)); err != nil {
		t.Errorf("brackets in a string counted: %v", err)
	}
	// DecodeStrict refuses it the same way, before decoding.
	var v any
	if e, _ := AsError(DecodeStrict([]byte(strings.Repeat("[", 100000)), &v)); e == nil || e.Code != CodeTooLarge {
		t.Errorf("DecodeStrict of 100000 '[': %v, want PayloadTooLarge", e)
	}
	// A duplicate deep down still names its path.
	dup := strings.Repeat(`{"a":`, 3) + `{"k":1,"k":2}` + strings.Repeat("}", 3)
	if e, _ := AsError(CheckDuplicateKeys([]byte(dup))); e == nil || e.Code != CodeDuplicateKey || e.Field != "a.a.a.k" {
		t.Errorf("deep duplicate: %v, want DuplicateKey on a.a.a.k", e)
	}
}

func TestCheckJSONBoundsKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i <= MaxJSONKeys; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"a":1}`)
	}
	b.WriteString("]")
	e, _ := AsError(CheckDuplicateKeys([]byte(b.String())))
	if e == nil || e.Code != CodeTooLarge || !strings.Contains(e.Message, "more than 100000 object keys") {
		t.Errorf("%d keys: %v, want PayloadTooLarge naming the 100000 keys", MaxJSONKeys+1, e)
	}
}

// TestCheckDuplicateKeysDeepMemory: a body of 20,000 "[" once cost the scan ~600 MB (a path
// string per level); now it is refused having allocated next to nothing.
func TestCheckDuplicateKeysDeepMemory(t *testing.T) {
	body := []byte(strings.Repeat("[", 20000))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := CheckDuplicateKeys(body)
	runtime.ReadMemStats(&after)
	if e, _ := AsError(err); e == nil || e.Code != CodeTooLarge {
		t.Errorf("20000 '[': %v, want PayloadTooLarge", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("the scan of 20000 '[' allocated %d bytes; want under 1 MiB", grew)
	}
}
