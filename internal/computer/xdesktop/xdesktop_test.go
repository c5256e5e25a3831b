package xdesktop

import (
	"strings"
	"testing"
)

func TestKeyNames(t *testing.T) {
	for _, ok := range []string{"Return", "ctrl+s", "alt+F4", "shift+Tab", "ctrl+shift+Page_Down", "a", "1", "KP_Add"} {
		if !keyNameOK(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "ctrl+", "+a", "a;b", "$(x)", "a b", "ctrl++", "é", "a'"} {
		if keyNameOK(bad) {
			t.Errorf("%q taken", bad)
		}
	}
}

func TestScript(t *testing.T) {
	s := Script(101)
	if strings.Contains(s, "\n") {
		t.Fatalf("the script is more than one line:\n%s", s)
	}
	for _, want := range []string{"Xvfb :101 ", "-screen 0 1280x800x24", "-nolisten tcp", "-nolisten local", `exec "$@"`} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %q:\n%s", want, s)
		}
	}
}
