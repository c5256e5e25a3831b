package cost

import "testing"

func TestParseUSD(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Micros
		err  bool
	}{
		{"1", 1_000_000, false},
		{"1.00", 1_000_000, false},
		{"0.50", 500_000, false},
		{".5", 500_000, false},
		{"$0.10", 100_000, false},
		{"0.000001", 1, false},
		{"0.0000001", 0, true},
		{"-1", 0, true},
		{"1e3", 0, true},
		{"", 0, true},
		{"1.", 0, true},
	}
	for _, c := range cases {
		got, err := ParseUSD(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d, err=%v", c.in, got, err, c.want, c.err)
		}
	}
	for m, want := range map[Micros]string{1_000_000: "1.00", 500_000: "0.50", 1: "0.000001", 123_450: "0.12345", 0: "0.00"} {
		if got := m.String(); got != want {
			t.Errorf("Micros(%d).String() = %q, want %q", m, got, want)
		}
	}
}
