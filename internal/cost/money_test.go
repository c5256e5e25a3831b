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

func TestDollars(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1.25":              "$1.25",
		"at least 0.001504": "at least $0.001504",
		"at most 5.096079":  "at most $5.096079",
		"at most -0.25":     "at most -$0.25",
		"-0.50":             "-$0.50",
		"unknown":           "unknown",
		"":                  "",
	} {
		if got := Dollars(in); got != want {
			t.Errorf("Dollars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBound(t *testing.T) {
	for _, c := range []struct{ billed, reserved, charged, excess Micros }{
		{0, 0, 0, 0},
		{99, 100, 99, 0},
		{100, 100, 100, 0},
		{101, 100, 100, 1},
		{6_910_000, 100_000, 100_000, 6_810_000},
	} {
		if ch, ex := Bound(c.billed, c.reserved); ch != c.charged || ex != c.excess {
			t.Errorf("Bound(%d, %d) = %d, %d; want %d, %d", c.billed, c.reserved, ch, ex, c.charged, c.excess)
		}
	}
}

func TestGuardArithmetic(t *testing.T) {
	t.Parallel()
	tab := Default()
	id, ok := tab.FamilyModel("haiku")
	if !ok {
		t.Fatal("no haiku model in the default table")
	}
	p, _ := tab.Lookup(id)
	worst, priced := tab.WorstCall(id, 1000, 200)
	if !priced || worst != p.WorstCaseBill(1000, 200) || worst <= 0 {
		t.Errorf("WorstCall(%s) = %s, %v; want %s, true", id, worst, priced, p.WorstCaseBill(1000, 200))
	}
	if w, priced := tab.WorstCall("no-such-model", 1000, 200); priced || w != 0 {
		t.Errorf("WorstCall of an unpriced model = %s, %v; want 0, false", w, priced)
	}
	for _, c := range []struct {
		spent, worst, limit, needed Micros
		over                        bool
	}{
		{0, 100, 100, 100, false}, // exactly at the cap fits
		{1, 100, 100, 101, true},
		{50, 49, 100, 99, false},
	} {
		if needed, over := OverCap(c.spent, c.worst, c.limit); needed != c.needed || over != c.over {
			t.Errorf("OverCap(%d, %d, %d) = %d, %v; want %d, %v", c.spent, c.worst, c.limit, needed, over, c.needed, c.over)
		}
	}
	if got := CreditsShort(300, 120); got != 180 {
		t.Errorf("CreditsShort(300, 120) = %d, want 180", got)
	}
	if got := CreditsShort(300, -20); got != 320 {
		t.Errorf("CreditsShort(300, -20) = %d, want 320", got)
	}
}
