package workflow

import (
	"runtime"
	"strings"
	"testing"
)

// A document nesting 127 objects under 30 KB keys (3.8 MB, within the 4 MiB the API takes) made
// the parser hold a pointer string per level, the keys of every level above it: 240 MB for one
// request. The pointer is now made only for an error, and a duplicate deep down still names it.
func TestParseDeepLongKeys(t *testing.T) {
	key := strings.Repeat("k", 30<<10)
	const levels = maxDepth - 1
	doc := strings.Repeat(`{"`+key+`":`, levels) + `{"d":1,"d":2}` + strings.Repeat("}", levels)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, errs := Validate([]byte(doc), Options{})
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("validating a %d MB document allocated %d MB; want under 64", len(doc)>>20, grew>>20)
	}
	want := "/" + strings.Repeat(key+"/", levels) + "d"
	found := false
	for _, e := range errs {
		if e.Code == CodeDuplicateKey {
			found = e.Pointer == want
		}
	}
	if !found {
		t.Errorf("no duplicate_key error at the deep pointer among %d errors", len(errs))
	}
}
