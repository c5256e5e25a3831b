package secret

import (
	"encoding/base64"
	"strings"
	"testing"
)

// The detector finds a value in each form and replaces it whole; ordinary text, a value's common
// prefix alone and a short value's parts are left as they are.
func TestDetector(t *testing.T) {
	const val = "sk-ant-api03-Zq8XvW2mN4pL7rT9yB1cD5fG3hJ6kQ0sU"
	var d Detector
	d.Add("secret:k/KEY", val)
	for _, s := range []string{
		val,
		"x " + base64.RawStdEncoding.EncodeToString([]byte("ab"+val+"cd")) + " y",
		"'" + val[:10] + "'\n'" + val[10:20] + "'\n'" + val[20:] + "'",
		"part: " + val[25:35],
	} {
		if _, ok := d.Find(s); !ok {
			t.Errorf("not found in %q", s)
		}
		if r := d.Redact(s); strings.Contains(r, val[25:35]) || !strings.Contains(r, "[secret:k/KEY]") {
			t.Errorf("Redact(%q) = %q", s, r)
		}
	}
	for _, s := range []string{"keys look like sk-ant-api03-", "The deploy script is scripts/deploy.sh.", strings.Repeat("a", 100)} {
		if _, ok := d.Find(s); ok {
			t.Errorf("found in ordinary text %q", s)
		}
	}
	var short Detector
	short.Add("r", "hunter2")
	if got := short.Redact(`pw "hunter2" and hun ter2`); got != `pw "[r]" and [r]` {
		t.Errorf("short value: %q", got)
	}
	var none Detector
	if none.Redact("x") != "x" || !none.Empty() {
		t.Error("the zero detector changed text")
	}
}
