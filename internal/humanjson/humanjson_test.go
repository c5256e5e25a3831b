package humanjson

import "testing"

func TestString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{ "command": "echo x \u003e /workspace/asked.txt" }`:                   `{"command":"echo x > /workspace/asked.txt"}`,
		`{"b":1,"a":[true,false,null,{"x":"a\u0026b \u003cc\u003e"}],"c":1.50}`: `{"b":1,"a":[true,false,null,{"x":"a&b <c>"}],"c":1.50}`,
		`{"q":"say \"hi\"\n\\u003e"}`:                                           `{"q":"say \"hi\"\n\\u003e"}`,
		`[]`:                                                                    `[]`,
		`{}`:                                                                    `{}`,
		`"<b>"`:                                                                 `"<b>"`,
		`12`:                                                                    `12`,
		`not json`:                                                              `not json`,
		`{"a":1} {"b":2}`:                                                       `{"a":1} {"b":2}`,
		`{"a":`:                                                                 `{"a":`,
		``:                                                                      ``,
	} {
		if got := String([]byte(in)); got != want {
			t.Errorf("String(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestOf(t *testing.T) {
	t.Parallel()
	if got := Of(map[string]string{"cmd": "a > b && c"}); got != `{"cmd":"a > b && c"}` {
		t.Errorf("Of = %s", got)
	}
}
