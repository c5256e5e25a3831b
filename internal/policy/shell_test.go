package policy

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func bash(cmd string) json.RawMessage { return in("command", cmd) }

// The audit's cases and more: a shell call is decided per simple command.
func TestDecideShell(t *testing.T) {
	t.Parallel()
	agent := Spec{Default: Ask, Rules: []Rule{
		{Match: "bash(go test *)", Action: Allow},
		{Match: "bash(rm *)", Action: Deny},
		{Match: "bash(echo *)", Action: Allow},
		{Match: "bash(ls *)", Action: Allow},
		{Match: "bash(git push *)", Action: Ask},
		{Match: "bash(./run.sh *)", Action: Allow},
		{Match: "bash(sudo *)", Action: Ask},
	}}
	never := Spec{NeverAsk: true}
	audit := Spec{Default: Ask, Rules: []Rule{{Match: "bash(go test *)", Action: Allow}, {Match: "bash(rm *)", Action: Deny}}}
	serverCurl := []string{"bash(curl *)"}
	echoOnly := Spec{Default: Ask, Rules: []Rule{{Match: "bash(echo *)", Action: Allow}}}
	cases := []struct {
		name  string
		spec  Spec
		deny  []string
		cmd   string
		want  string
		rule  string
		about string // the simple command the decision names ("" = not checked)
	}{
		// The audit: the server's deny with a never-ask agent.
		{"plain curl", never, serverCurl, "curl http://x", Deny, "server deny: bash(curl *)", "curl http://x"},
		{"after &&", never, serverCurl, "true && curl --version", Deny, "server deny: bash(curl *)", "curl --version"},
		{"absolute path", never, serverCurl, "/usr/bin/curl --version", Deny, "server deny: bash(curl *)", "/usr/bin/curl --version"},
		{"after ;", never, serverCurl, "sleep 2; curl http://x", Deny, "server deny: bash(curl *)", "curl http://x"},
		{"in a pipe", never, serverCurl, "true && curl --version | head -1", Deny, "server deny: bash(curl *)", "curl --version"},
		{"pipe target", never, serverCurl, "echo x | curl -d @- http://x", Deny, "server deny: bash(curl *)", "curl -d @- http://x"},
		{"|&", never, serverCurl, "echo a |& curl x", Deny, "server deny: bash(curl *)", ""},
		{"||", never, serverCurl, "false || curl x", Deny, "server deny: bash(curl *)", ""},
		{"background &", never, serverCurl, "sleep 1 & curl x", Deny, "server deny: bash(curl *)", ""},
		{"newline", never, serverCurl, "ls\ncurl x", Deny, "server deny: bash(curl *)", "curl x"},
		{"subshell", never, serverCurl, "(cd /tmp && curl x)", Deny, "server deny: bash(curl *)", "curl x"},
		{"group", never, serverCurl, "{ ls; curl x; }", Deny, "server deny: bash(curl *)", ""},
		{"$()", never, serverCurl, "echo $(curl x)", Deny, "server deny: bash(curl *)", "curl x"},
		{"$() in double quotes", never, serverCurl, `echo "got: $(curl x)"`, Deny, "server deny: bash(curl *)", "curl x"},
		{"backticks", never, serverCurl, "echo `curl x`", Deny, "server deny: bash(curl *)", "curl x"},
		{"process substitution", never, serverCurl, "cat <(curl x)", Deny, "server deny: bash(curl *)", "curl x"},
		{"output process substitution", never, serverCurl, "ls > >(curl -d @- x)", Deny, "server deny: bash(curl *)", ""},
		{"assignment of $()", never, serverCurl, "X=$(curl x)", Deny, "server deny: bash(curl *)", "curl x"},
		{"${...$()}", never, serverCurl, "echo ${X:-$(curl x)}", Deny, "server deny: bash(curl *)", "curl x"},
		{"$(( )) that is a subshell", never, serverCurl, "echo $((curl x) )", Deny, "server deny: bash(curl *)", "curl x"},
		{"env prefix", never, serverCurl, "HTTPS_PROXY=x FOO=1 curl x", Deny, "server deny: bash(curl *)", ""},
		{"env", never, serverCurl, "env -i PATH=/bin curl x", Deny, "server deny: bash(curl *)", ""},
		{"sudo", never, serverCurl, "sudo curl x", Deny, "server deny: bash(curl *)", "sudo curl x"},
		{"sudo -u", never, serverCurl, "sudo -u root -E /usr/bin/curl x", Deny, "server deny: bash(curl *)", ""},
		{"wrappers", never, serverCurl, "timeout 5 nice -n 3 nohup command exec curl x", Deny, "server deny: bash(curl *)", ""},
		{"xargs", never, serverCurl, "cat urls | xargs -n 1 curl -O", Deny, "server deny: bash(curl *)", ""},
		{"find -exec", never, serverCurl, `find . -name '*.url' -exec curl -K {} \;`, Deny, "server deny: bash(curl *)", "curl -K {}"},
		{"time", never, serverCurl, "time curl x", Deny, "server deny: bash(curl *)", ""},
		{"if", never, serverCurl, "if curl x; then echo ok; fi", Deny, "server deny: bash(curl *)", ""},
		{"for body", never, serverCurl, "for u in a b; do curl $u; done", Deny, "server deny: bash(curl *)", ""},
		{"while condition", never, serverCurl, "while curl x; do sleep 1; done", Deny, "server deny: bash(curl *)", ""},
		{"case body", never, serverCurl, "case $x in a) curl x;; *) ls;; esac", Deny, "server deny: bash(curl *)", ""},
		{"$(case) in quotes", never, serverCurl, `echo "$(case x in a) curl y;; esac)"`, Deny, "server deny: bash(curl *)", ""},
		{"function body", never, serverCurl, "f() { curl x; }; f", Deny, "server deny: bash(curl *)", ""},
		{"negation", never, serverCurl, "! curl x", Deny, "server deny: bash(curl *)", ""},
		{"quoted program", never, serverCurl, `"curl" x`, Deny, "server deny: bash(curl *)", ""},
		{"escaped program", never, serverCurl, `\curl x`, Deny, "server deny: bash(curl *)", ""},
		{"split program", never, serverCurl, `c'ur'l x`, Deny, "server deny: bash(curl *)", ""},
		{"line continuation", never, serverCurl, "cu\\\nrl x", Deny, "server deny: bash(curl *)", ""},
		{"ansi-c program", never, serverCurl, `$'\x63url' x`, Deny, "server deny: bash(curl *)", ""},
		{"no arguments", never, serverCurl, "ls; curl", Deny, "server deny: bash(curl *)", "curl"},
		{"tab", never, serverCurl, "curl\thttp://x", Deny, "server deny: bash(curl *)", ""},
		{"redirection before", never, serverCurl, "2>/dev/null curl x", Deny, "server deny: bash(curl *)", ""},
		{"unquoted heredoc body", never, serverCurl, "cat <<EOF\nit's $(curl x)\nEOF\nls", Deny, "server deny: bash(curl *)", "curl x"},
		{"here-string substitution", never, serverCurl, `cat <<< "$(curl x)"`, Deny, "server deny: bash(curl *)", "curl x"},
		{"after a comment line", never, serverCurl, "# it's fine\ncurl x", Deny, "server deny: bash(curl *)", "curl x"},
		// Quoted, escaped and commented text is not a command.
		{"; in double quotes", never, serverCurl, `echo "a; curl x"`, Allow, "default", ""},
		{"&& in single quotes", never, serverCurl, `echo 'a && curl b'`, Allow, "default", ""},
		{"escaped ;", never, serverCurl, `echo a\; curl x`, Allow, "default", ""},
		{"comment", never, serverCurl, "echo hi # ; curl x", Allow, "default", ""},
		{"quoted heredoc body", never, serverCurl, "cat <<'EOF'\n$(curl x); curl y\nEOF\nls", Allow, "default", ""},
		{"heredoc body with a quote", never, serverCurl, "cat <<EOF\ncurl is nice, isn't it\nEOF", Allow, "default", ""},
		{"here-string", never, serverCurl, `grep x <<< 'a; curl b'`, Allow, "default", ""},
		{"curl as an argument", never, serverCurl, "man curl; which curl", Allow, "default", ""},
		{"curlish", never, serverCurl, "curly x", Allow, "default", ""},
		{"arithmetic", never, serverCurl, "echo $((1+2))", Allow, "default", ""},
		{"script file", never, serverCurl, "bash ./build.sh && python3 -m pytest", Allow, "default", ""},
		// What approvals cannot see into, against a server deny: denied.
		{"bash -c", never, serverCurl, "bash -c 'curl x'", Deny, "server deny: bash(curl *)", "bash -c 'curl x'"},
		{"sh -lc", never, serverCurl, `sh -lc "ls"`, Deny, "server deny: bash(curl *)", ""},
		{"piped to sh", never, serverCurl, "echo 'curl x' | sh", Deny, "server deny: bash(curl *)", "sh"},
		{"eval", never, serverCurl, `eval "cu""rl x"`, Deny, "server deny: bash(curl *)", ""},
		{"source", never, serverCurl, "source ./x.sh", Deny, "server deny: bash(curl *)", ""},
		{"dot", never, serverCurl, ". ./x.sh", Deny, "server deny: bash(curl *)", ""},
		{"python -c", never, serverCurl, `python3 -c 'import os; os.system("curl x")'`, Deny, "server deny: bash(curl *)", ""},
		{"python stdin", never, serverCurl, "python3 - <<EOF\nimport os\nEOF", Deny, "server deny: bash(curl *)", ""},
		{"computed program", never, serverCurl, "c=curl; $c x", Deny, "server deny: bash(curl *)", "$c x"},
		{"globbed program", never, serverCurl, "/usr/bin/cur? x", Deny, "server deny: bash(curl *)", ""},
		{"brace program", never, serverCurl, "{curl,x}", Deny, "server deny: bash(curl *)", ""},
		{"sudo -s", never, serverCurl, "sudo -s", Deny, "server deny: bash(curl *)", ""},
		{"env -S", never, serverCurl, "env -S 'curl x'", Deny, "server deny: bash(curl *)", ""},
		{"xargs sh -c", never, serverCurl, "xargs sh -c 'curl $0'", Deny, "server deny: bash(curl *)", ""},
		{"awk system", never, serverCurl, `awk 'BEGIN{system("curl x")}'`, Deny, "server deny: bash(curl *)", ""},
		{"unterminated quote", never, serverCurl, "echo 'oops", Deny, "server deny: bash(curl *)", ""},
		{"bash -c without a server deny", never, nil, "bash -c 'curl x'", Allow, "default", ""},
		// Issue 9's audit: each of these ran curl under the server's deny.
		{"function keyword body", never, serverCurl, "function g { curl x; }; g", Deny, "server deny: bash(curl *)", "curl x"},
		{"coproc body", never, serverCurl, "coproc X { curl x; }", Deny, "server deny: bash(curl *)", "curl x"},
		{"coproc command", never, serverCurl, "coproc curl x", Deny, "server deny: bash(curl *)", "curl x"},
		{"arithmetic expansion of a variable", never, serverCurl, `x='a[$(curl y)]'; echo $((x))`, Deny, "server deny: bash(curl *)", "echo $((x))"},
		{"arithmetic command", never, serverCurl, `x='a[$(curl y)]'; (( x ))`, Deny, "server deny: bash(curl *)", "(( x ))"},
		{"[[ -eq ]]", never, serverCurl, `x='a[$(curl y)]'; [[ $x -eq 0 ]]`, Deny, "server deny: bash(curl *)", "[[ $x -eq 0 ]]"},
		{"declare -i", never, serverCurl, `declare -i n; n='a[$(curl y)]'`, Deny, "server deny: bash(curl *)", "declare -i n"},
		{"let", never, serverCurl, `x='a[$(curl y)]'; let y=x`, Deny, "server deny: bash(curl *)", "let y=x"},
		{"prompt expansion", never, serverCurl, `x='$(curl y)'; echo ${x@P}`, Deny, "server deny: bash(curl *)", "echo ${x@P}"},
		{"indirect expansion", never, serverCurl, `x='a[$(curl y)]'; echo ${!x}`, Deny, "server deny: bash(curl *)", "echo ${!x}"},
		{"subscript of a read", never, serverCurl, `read 'a[$(curl y)]' <<< 1`, Deny, "server deny: bash(curl *)", ""},
		{"PS4 and xtrace", never, serverCurl, `PS4='$(curl y)'; set -x; ls`, Deny, "server deny: bash(curl *)", ""},
		{"a parse error", never, serverCurl, "ls; if then", Deny, "server deny: bash(curl *)", ""},
		{"plain arithmetic", never, serverCurl, "echo $((2*3)) $#", Allow, "default", ""},
		// The same under default: ask with only echo allowed: what the construct hides is asked.
		{"arithmetic under default ask", echoOnly, nil, `x='a[$(curl y)]'; echo $((x))`, Ask, "default", "echo $((x))"},
		{"prompt expansion under default ask", echoOnly, nil, `echo ${x@P}`, Ask, "default", "echo ${x@P}"},
		{"arithmetic under a tool-wide ask", Spec{Rules: []Rule{{Match: "bash(echo *)", Action: Allow}, {Match: "bash", Action: Ask}}}, nil, `echo $((x))`, Ask, "rule 2: bash", ""},
		{"arithmetic under default deny", Spec{Default: Deny, Rules: echoOnly.Rules}, nil, `echo $((x))`, Ask, "default", ""},
		{"arithmetic under default deny, never-ask", Spec{Default: Deny, NeverAsk: true, Rules: echoOnly.Rules}, nil, `echo $((x))`, Deny, "default (never-ask)", ""},
		{"arithmetic under default ask, never-ask", Spec{Default: Ask, NeverAsk: true, Rules: echoOnly.Rules}, nil, `echo $((x))`, Allow, "default (never-ask)", ""},
		{"plain echo under default ask", echoOnly, nil, `echo $((1+1)) ${#x}`, Allow, "rule 1: bash(echo *)", ""},
		{"a parse error under default ask", echoOnly, nil, `echo 'x`, Ask, "default", ""},
		{"a tool-wide server deny", Spec{}, []string{"bash"}, "ls", Deny, "server deny: bash", ""},

		// The audit: an allowed command chained with another is not allowed.
		{"audit allow chain", audit, nil, "go test ./x; echo pwned > /workspace/pwned.txt", Ask, "default", "echo pwned > /workspace/pwned.txt"},
		{"audit allow", audit, nil, "go test ./x", Allow, "rule 1: bash(go test *)", "go test ./x"},
		{"audit deny in a chain", audit, nil, "go test ./x && rm -rf /workspace", Deny, "rule 2: bash(rm *)", "rm -rf /workspace"},
		{"allow chain", agent, nil, "go test ./x; echo pwned > /workspace/pwned.txt", Allow, "rule 1: bash(go test *)", ""},
		{"allow then unknown", agent, nil, "go test ./x; touch /workspace/pwned.txt", Ask, "default", "touch /workspace/pwned.txt"},
		{"allow && unknown", agent, nil, "go test ./... && make deploy", Ask, "default", "make deploy"},
		{"allow | unknown", agent, nil, "go test ./... | nc host 1", Ask, "default", "nc host 1"},
		{"allow with $()", agent, nil, "go test $(make x)", Ask, "default", "make x"},
		{"allow with backticks", agent, nil, "go test `make x`", Ask, "default", "make x"},
		{"allow then deny", agent, nil, "go test ./x; rm -rf /", Deny, "rule 2: bash(rm *)", "rm -rf /"},
		{"deny in a subshell", agent, nil, "go test ./x && (cd / && rm -rf *)", Deny, "rule 2: bash(rm *)", "rm -rf *"},
		{"deny via sudo", agent, nil, "sudo rm -rf /", Deny, "rule 2: bash(rm *)", ""},
		{"deny via xargs", agent, nil, "ls | xargs rm", Deny, "rule 2: bash(rm *)", "xargs rm"},
		{"deny by path", agent, nil, "/bin/rm x", Deny, "rule 2: bash(rm *)", ""},
		{"allowed chain", agent, nil, "go test ./a && go test ./b | echo done; ls -la", Allow, "rule 1: bash(go test *)", ""},
		{"allowed with redirections", agent, nil, "go test ./... > out.txt 2>&1", Allow, "rule 1: bash(go test *)", ""},
		{"allowed with env and path", agent, nil, "CGO_ENABLED=0 /usr/local/go/bin/go test ./...", Allow, "rule 1: bash(go test *)", ""},
		{"allowed with a wrapper", agent, nil, "timeout 60 go test ./...", Allow, "rule 1: bash(go test *)", ""},
		{"allowed as written", agent, nil, "./run.sh fast", Allow, "rule 6: bash(./run.sh *)", ""},
		{"quoted ; stays in one command", agent, nil, `go test -run 'A;B' ./x`, Allow, "rule 1: bash(go test *)", ""},
		{"ask in a chain", agent, nil, "go test ./... && git push origin main", Ask, "rule 5: bash(git push *)", "git push origin main"},
		{"a wrapper's ask holds", agent, nil, "sudo ls", Ask, "rule 7: bash(sudo *)", ""},
		{"deny over ask", agent, nil, "git push x; rm y", Deny, "rule 2: bash(rm *)", ""},
		{"opaque against an agent deny asks", agent, nil, "go test ./x && bash -c 'rm -rf /'", Ask, "rule 2: bash(rm *)", "bash -c 'rm -rf /'"},
		{"opaque against an agent deny, never-ask", Spec{NeverAsk: true, Rules: agent.Rules}, nil, "eval \"$CMD\"", Deny, "rule 2: bash(rm *) (never-ask)", ""},
		{"opaque against an agent ask", Spec{Rules: []Rule{{Match: "bash(git push *)", Action: Ask}}}, nil, "eval \"$CMD\"", Ask, "rule 1: bash(git push *)", ""},
		{"opaque against an agent ask, never-ask", Spec{NeverAsk: true, Rules: []Rule{{Match: "bash(git push *)", Action: Ask}}}, nil, "eval x", Allow, "rule 1: bash(git push *) (never-ask)", ""},
		{"default deny", Spec{Default: Deny, Rules: agent.Rules}, nil, "go test ./x; make", Deny, "default", "make"},
		{"empty command", agent, nil, "", Ask, "default", ""},
		// Order still decides within one command.
		{"carve-out before a deny", Spec{Default: Ask, Rules: []Rule{{Match: "bash(rm -i *)", Action: Allow}, {Match: "bash(rm *)", Action: Deny}}}, nil, "rm -i x", Allow, "rule 1: bash(rm -i *)", ""},
		{"tool-wide deny first", Spec{Rules: []Rule{{Match: "bash", Action: Deny}, {Match: "bash(go test *)", Action: Allow}}}, nil, "go test ./...", Deny, "rule 1: bash", ""},
		{"tool-wide ask after an allow", Spec{Rules: []Rule{{Match: "bash(go test *)", Action: Allow}, {Match: "bash", Action: Ask}}}, nil, "FOO=1 go test ./...", Allow, "rule 1: bash(go test *)", ""},
		{"tool-wide ask for the rest", Spec{Rules: []Rule{{Match: "bash(go test *)", Action: Allow}, {Match: "bash", Action: Ask}}}, nil, "go test ./... && ls", Ask, "rule 2: bash", "ls"},
	}
	for _, c := range cases {
		got := Decide(c.spec, c.deny, "bash", bash(c.cmd))
		if got.Action != c.want || got.Rule != c.rule || (c.about != "" && got.Command != c.about) {
			t.Errorf("%s: %q: got %s by %q on %q (%s), want %s by %q on %q", c.name, c.cmd, got.Action, got.Rule, got.Command, got.Explain(), c.want, c.rule, c.about)
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec Spec
		deny []string
		cmd  string
		want string
	}{
		{Spec{NeverAsk: true}, []string{"bash(curl *)"}, "true && curl --version | head -1",
			`denied by the server's rule bash(curl *): curl --version (in "true && curl --version | head -1")`},
		{Spec{}, []string{"bash(curl *)"}, "curl x", `denied by the server's rule bash(curl *): curl x`},
		{Spec{}, []string{"bash(curl *)"}, "ls && bash -c 'curl x'",
			`denied by the server's rule bash(curl *): bash -c 'curl x' uses bash -c, whose commands approvals cannot check; write the commands plainly (in "ls && bash -c 'curl x'")`},
		{Spec{Default: Ask, Rules: []Rule{{Match: "bash(go test *)", Action: Allow}}}, nil, "go test ./x; make",
			`needs approval by the agent's default: make (in "go test ./x; make")`},
		{Spec{Rules: []Rule{{Match: "bash(rm *)", Action: Deny}}}, nil, "rm x",
			`denied by the agent's rule 1 bash(rm *): rm x`},
	}
	for _, c := range cases {
		if got := Decide(c.spec, c.deny, "bash", bash(c.cmd)).Explain(); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.cmd, got, c.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line  string
		forms []string // the first form of each command, in order
	}{
		{"a; b && c || d | e |& f & g\nh", []string{"a", "b", "c", "d", "e", "f", "g", "h"}},
		{`echo "a; b" 'c && d' e\;f`, []string{"echo a; b c && d e;f"}},
		{"(a; (b)) && { c; }", []string{"a", "b", "c"}},
		{"x $(a $(b)) `c`", []string{"b", "a $(b)", "c", "x $(a $(b)) `c`"}},
		{"diff <(a) >(b)", []string{"a", "b", "diff <(a) >(b)"}},
		{"X=1 Y=$(a) b > out 2>&1 < in", []string{"a", "X=1 Y=$(a) b > out 2>&1 < in"}},
		{"X=1", nil},
		{"> out", nil},
		{"for i in $(seq 3); do echo $i; done", []string{"seq 3", "echo $i"}},
		// (a|b) is a pattern with its optional "(", not a subshell: the hand-written splitter
		// listed a and b as commands; neither runs.
		{"case $x in (a|b) c;; d) e;; esac", []string{"c", "e"}},
		{"case $(a) in $(b)) c;; esac", []string{"a", "b", "c"}}, // words and patterns are expanded
		{"a=(1 $(b) 2); c", []string{"b", "c"}},
		{"cat <<-EOF | d\n\t$(b)\n\tEOF\ne", []string{"cat <<- EOF", "d", "b", "e"}},
		{"echo $'a\\'; b'", []string{"echo a'; b"}},
		{"f () { a; }", []string{"a"}},
		{"[[ -n $(a) ]] && b", []string{"a", "b"}},
		// What the parser shows that the hand-written splitter did not read.
		{"function g { a; }; g", []string{"a", "g"}},
		{"coproc X { a; }", []string{"a"}},
		{"coproc a b", []string{"a b"}},
		{"g() (a); g", []string{"a", "g"}},
		{"select x in $(a); do b; done", []string{"a", "b"}},
		{"while read l; do a; done < <(b)", []string{"read l", "a", "b"}},
		{"{ a; } > $(b)", []string{"a", "b"}},
		{"time -p a | b", []string{"a", "b"}},
		{"export X=$(a) Y=1", []string{"a", "export X=$(a) Y=1"}},
		{"echo $((1 + 0x1f)) ${#x} $(( $# + ${#a[@]} ))", []string{"echo $((1 + 0x1f)) ${#x} $(( $# + ${#a[@]} ))"}},
		{"[[ $# -gt 0 && ${#x} -lt 3 ]] && a", []string{"a"}},
		{"echo ${x:-$(a)} ${x/$(b)/$(c)} ${x@Q}", []string{"a", "b", "c", "echo ${x:-$(a)} ${x/$(b)/$(c)} ${x@Q}"}},
		{"declare -A m=([$(a)]=1 [k]=$(b))", []string{"a", "b", "declare -A m=([$(a)]=1 [k]=$(b))"}},
		{"cat <<A <<'B'\n$(a)\nA\n$(b)\nB", []string{"cat << A << B", "a"}},
		{"echo \\\n $(a)", []string{"a", "echo $(a)"}},
	}
	for _, c := range cases {
		var got []string
		for _, cmd := range SplitCommand(c.line) {
			if cmd.Opaque != "" {
				t.Errorf("%q: %q is opaque: %s", c.line, cmd.Text, cmd.Opaque)
			}
			if len(cmd.Forms) > 0 {
				got = append(got, cmd.Forms[0])
			}
		}
		if strings.Join(got, "\n") != strings.Join(c.forms, "\n") {
			t.Errorf("%q: got %q, want %q", c.line, got, c.forms)
		}
	}
	// The forms of one command.
	got := SplitCommand("FOO=1 sudo -u x /usr/bin/env A=2 timeout -s KILL 5 /bin/curl -s x > o")
	want := []string{"FOO=1 sudo -u x /usr/bin/env A=2 timeout -s KILL 5 /bin/curl -s x > o", "sudo -u x /usr/bin/env A=2 timeout -s KILL 5 /bin/curl -s x > o",
		"/usr/bin/env A=2 timeout -s KILL 5 /bin/curl -s x > o", "env A=2 timeout -s KILL 5 /bin/curl -s x > o",
		"A=2 timeout -s KILL 5 /bin/curl -s x > o", "timeout -s KILL 5 /bin/curl -s x > o", "/bin/curl -s x > o", "curl -s x > o"}
	if len(got) != 1 || strings.Join(got[0].Forms, "\n") != strings.Join(want, "\n") {
		t.Errorf("forms:\n%s", strings.Join(got[0].Forms, "\n"))
	}
	// Constructs approvals cannot see into.
	for line, construct := range map[string]string{
		"eval x": "eval", "bash -c 'x'": "bash -c", "sh -ec x": "sh -c", "echo x | bash": "bash reading commands from its input",
		"source f": "source", ". f": ".", "python3 -c x": "python3 -c", "perl -ne x": "perl -e", "node -e x": "node -e",
		"ruby -e x": "ruby -e", "$X y": "a program name computed", "sudo -i": "sudo -i", "su -c x": "su", "watch x": "watch",
		"trap 'x' EXIT": "trap", "echo 'x": "an unterminated single quote", `echo "x`: "an unterminated double quote",
		"echo $(x": "an unclosed (", "echo `x": "an unterminated backtick", "flock f -c x": "flock -c",
		// Issue 9's audit: text run by arithmetic, prompt expansion and the like.
		"echo $((x))": "arithmetic on a variable", "(( x ))": "arithmetic on a variable", "((i++))": "arithmetic on a variable",
		"echo $(( $x + 1 ))": "arithmetic on a variable", "echo $[x]": "arithmetic on a variable",
		"echo $(( $(a) ))": "arithmetic on a variable", "[[ $x -eq 0 ]]": "arithmetic on a variable",
		"[[ 0 -lt x ]]": "arithmetic on a variable", "[[ -v a[$i] ]]": "an array subscript",
		"declare -i x": "declare -i", "local -i n=1": "local -i", "typeset -ni r=x": "typeset -i",
		"declare -n r=x": "declare -i or -n", "let x=y": "let (arithmetic", "let 'x+=1'": "let (arithmetic",
		"builtin let x": "let (arithmetic", "echo ${a[i]}": "arithmetic on a variable", "echo ${a[$i]}": "arithmetic on a variable",
		"a[i]=1": "arithmetic on a variable", "a=([i]=1)": "arithmetic on a variable", "a['k']=1": "arithmetic on a variable",
		"declare -A m=([k]=$(echo ${a[i]}))": "arithmetic on a variable", "declare -A m=([k]=${a[i]})": "arithmetic on a variable",
		"echo ${x:i:2}": "arithmetic on a variable", "for ((i=0; i<3; i++)); do echo; done": "arithmetic on a variable",
		"echo ${x@P}": "a prompt expansion", "echo ${x@$op}": "a line that does not parse", `echo "${x@P}"`: "a prompt expansion", "echo ${!x}": "an indirect expansion",
		"echo ${x:=y}": "an assignment inside an expansion", "echo ${x=$(a)}": "an assignment inside an expansion",
		"trap -- 'x' EXIT": "trap", "builtin eval x": "eval", "command eval x": "eval", "exec bash -c x": "bash -c",
		"read 'a[$(x)]'": "an array subscript given to read", "unset 'a[$i]'": "an array subscript given to unset",
		"printf -v 'a[$(x)]' 1": "an array subscript given to printf", "test -v 'a[x]'": "an array subscript given to test",
		"declare 'a[$(x)]=1'": "an array subscript given to declare", `declare "$x"`: "a declare argument computed",
		"PS4='$(x)'; set -x; ls": "an assignment to PS4", "BASH_ENV=./x bash s.sh": "an assignment to BASH_ENV",
		"export PROMPT_COMMAND=x": "an assignment to PROMPT_COMMAND", "env BASH_ENV=./x bash s.sh": "an assignment to BASH_ENV",
		"env 'BASH_FUNC_ls%%=() { x; }' bash s.sh": "an assignment to BASH_FUNC_ls%%", "printf -v'a[$(x)]' 1": "an array subscript given to printf", "compgen -C x y": "compgen -C", "hash -p /bin/x ls": "hash -p",
		"echo @($(x))": "a substitution inside an extended glob", "echo $((": "a line that does not parse",
		"if then": "a line that does not parse", "echo ${": "a line that does not parse",
	} {
		var found []string
		for _, c := range SplitCommand(line) {
			if c.Opaque != "" {
				found = append(found, c.Opaque)
			}
		}
		if len(found) == 0 || !strings.HasPrefix(found[0], construct) {
			t.Errorf("%q: opaque %q, want %q", line, found, construct)
		}
	}
	// And what is plain.
	for _, line := range []string{"bash x.sh", "python3 -m pytest -x", "python3 t.py", "node a.js", "bash --version", "awk '{print $1}' f",
		"cat <<< 'x; y'", "trap - EXIT", "command -v go",
		"echo $((1+2)) $((0x10 * 2#101)) ${#x} $(( ${#a[@]} - $# ))", "[[ $# -gt 0 ]]", "[[ $x == 1 ]]", "((1 < 2))",
		"echo ${a[0]} ${a[@]} ${!a[@]} ${!pre*} ${x@Q}", "a[0]=1", "declare -A m=([k]=v)", "declare -a a=(1 2)", "export A='[b]'",
		"unset 'a[0]' x", "read -r line", "printf '%s[x]' a", "trap -p", "trap - EXIT INT", "let 1+2", "x=1; echo $x",
		"f() { a; }; f", "coproc a", "declare -r x=1", "PS=1 ls"} {
		for _, c := range SplitCommand(line) {
			if c.Opaque != "" {
				t.Errorf("%q: opaque %q", line, c.Opaque)
			}
		}
	}
}

// Non-shell tools keep matching their path argument; a file tool with a "command" key is not a shell.
func TestNonShellUnchanged(t *testing.T) {
	t.Parallel()
	spec := Spec{Default: Ask, Rules: []Rule{{Match: "write(docs/**)", Action: Allow}, {Match: "web_fetch(https://example.com/*)", Action: Allow}}}
	if d := Decide(spec, nil, "write", in("path", "docs/a; b.md")); d.Action != Allow {
		t.Errorf("write: %+v", d)
	}
	if d := Decide(spec, nil, "web_fetch", in("url", "https://example.com/a;b")); d.Action != Allow {
		t.Errorf("web_fetch: %+v", d)
	}
	if _, ok := ShellCommand("write", json.RawMessage(`{"path":"x","command":"y"}`)); ok {
		t.Error("write is not a shell")
	}
}

// The splitter ends, and does not panic, on any input; and the decision keeps its promises
// about what the splitter returns: a line with anything opaque is never allowed under a server
// deny, and is allowed under default ask with only echo allowed only if every command is a
// plain echo.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"a; b", "echo \"$(a ')' \"b\")\"", "cat <<E\n$(x\nE", "$((", "${", "`", "x=(", "case a in a) $(b) esac", "$'\\x", "a <<", "((a)",
		"function g { curl x; }; g", "coproc X { curl x; }", "echo $((x))", "(( x ))", "[[ $x -eq 0 ]]", "declare -i x", "let x=y", "echo ${x@P}",
		"echo ${!x}", "echo $((curl x) )", "a[i]=1", "echo ${a[$i]:x:1}", "read 'a[$(x)]'", "PS4='$(x)'; set -x", "echo @($(x))",
		// Issue 24: commands hidden in program options and environment.
		"GIT_SSH_COMMAND='x' git ls-remote ssh://h/r", "git -c alias.zz='!x' zz", "tar --checkpoint-action=exec='x' -cf a .",
		"tar cIf x a", "ssh -oProxyCommand=x h", "rsync -avze 'x' a b", "sed 's/a/b/e' f", "export 'LD_PRELOAD=x'", "sudo xargs env x"} {
		f.Add(s)
	}
	echoOnly := Spec{Default: Ask, Rules: []Rule{{Match: "bash(echo *)", Action: Allow}}}
	f.Fuzz(func(t *testing.T, s string) {
		SplitCommand(s)
		s, _ = ShellCommand("bash", bash(s)) // the line the tool gets: JSON makes it valid UTF-8
		cmds := SplitCommand(s)
		Decide(Spec{Rules: []Rule{{Match: "bash(rm *)", Action: Deny}}}, []string{"bash(curl *)"}, "bash", bash(s))
		dark := false
		plainEcho := true
		for _, c := range cmds {
			dark = dark || c.Opaque != ""
			echo := false
			for _, f := range c.Forms {
				echo = echo || matchShell("echo *", f)
			}
			plainEcho = plainEcho && echo
		}
		if d := Decide(Spec{NeverAsk: true}, []string{"bash(curl *)"}, "bash", bash(s)); dark && d.Action != Deny {
			t.Errorf("%q has an opaque part but is %s under a server deny: %s", s, d.Action, d.Explain())
		}
		if d := Decide(echoOnly, nil, "bash", bash(s)); d.Action == Allow && (dark || !plainEcho) && len(cmds) > 0 {
			t.Errorf("%q is allowed by echo * alone: %s (%+v)", s, d.Explain(), cmds)
		}
	})
}

// Lines the parser would recurse too deep on (a stack overflow is fatal, no recover catches it)
// or that are too long are opaque without being parsed; a long flat line is read.
func TestSplitCommandLimits(t *testing.T) {
	t.Parallel()
	for name, line := range map[string]string{
		"arithmetic": strings.Repeat("$((", 300000), "subshells": strings.Repeat("(", 300000),
		"subscripts": strings.Repeat("${a[", 300000), "quoted substitutions": strings.Repeat(`"$(`, 300000),
		"too long": "echo " + strings.Repeat("a", maxLine),
	} {
		cmds := SplitCommand(line)
		if len(cmds) != 1 || cmds[0].Opaque == "" {
			t.Errorf("%s: %d commands, first opaque %q", name, len(cmds), cmds[0].Opaque)
		}
		if d := Decide(Spec{NeverAsk: true}, []string{"bash(curl *)"}, "bash", bash(line)); d.Action != Deny {
			t.Errorf("%s: %s under a server deny", name, d.Action)
		}
	}
	if cmds := SplitCommand(strings.Repeat("(a) && ", 5000) + "curl x"); len(cmds) != 5001 || cmds[5000].Forms[0] != "curl x" {
		t.Errorf("a long chain: %d commands", len(cmds))
	}
}

// bashLines are run by real bash: every simple command it runs must be one SplitCommand lists,
// unless the line has an opaque part. The programs do not exist (PATH is an empty folder) and
// the builtins used only print or assign.
var bashLines = []string{
	"a; b && c || d | e |& f & g\nh", `echo "a; b" 'c && d' e\;f`, "(a; (b)) && { c; }", "x $(a $(b)) `c`",
	"diff <(a) >(b)", "X=1 Y=$(a) b > out 2>&1 < in", "for i in $(seq 3); do echo $i; done",
	"case x in (a|b) c;; x) e;; esac", "a=(1 $(b) 2); c", "cat <<-EOF | d\n\t$(b)\n\tEOF\ne", "echo $'a\\'; b'",
	"f () { a; }; f", "[[ -n $(a) ]] && b", "function g { a; }; g", "coproc X { a; }; wait", "coproc a b; wait",
	"g() (a); g", "while read l; do a; done < <(b)", "{ a; } > $(b)", "time -p a | b", "export X=$(a) Y=1",
	"echo $((1 + 0x1f)) ${#x} $(( $# + ${#a[@]} ))", "[[ $# -gt 0 || ${#x} -lt 3 ]] && a",
	"echo ${x:-$(a)} ${x/$(b)/$(c)} ${x@Q}", "declare -A m=([$(a)]=1 [k]=$(b))", "cat <<A <<'B'\n$(a)\nA\n$(b)\nB",
	"echo \\\n $(a)", "echo $((a) )", "x=$((a)|b)", "((a); (b))", "if a; then b; elif c; then d; else e; fi",
	"until a; do break; done", "! a", "cu\\\nrl x", `c'ur'l x`, `$'\x63url' x`, "2>/dev/null a x", "echo x#$(a)",
	"cat <<E\"O\"F\n$(a)\nEOF\nb", "a=`b`", "echo `echo \\`a\\``", "case x in x) a ;& y) b;; esac", "[[ x == $(a) ]]",
	"echo ${x:-${y:-$(a)}}", "echo \"$(echo \"$(a)\")\"", "x=1; echo $x; a", "sudo a", "env -i A=1 a", "nohup a &",
	"find . -maxdepth 0 -exec a {} \\;", "xargs a < /dev/null", "exec 3< <(a); b", "echo hi # ; a",
	`x='a[$(a1)]'; echo $((x))`, `x='a[$(a2)]'; (( x ))`, `x='a[$(a3)]'; [[ $x -eq 0 ]]`, `declare -i n; n='a[$(a4)]'`,
	`x='a[$(a5)]'; let y=x`, `x='$(a6)'; echo ${x@P}`, `x='a[$(a7)]'; echo ${!x}`, `x='a[$(a8)]'; echo ${arr[x]}`,
	`read 'a[$(a9)]' <<< 1`, `PS4='$(a10) '; set -x; b`, "trap 'a11' EXIT", "eval a12", `s=abc; x='a[$(a13)]'; echo ${s:x}`,
	"printf -v 'a[$(a14)]' 1", "unset 'a[$(a15)]'", `x='a[$(a16)]'; for ((i=x; i<0; i++)); do :; done`,
}

// xtrace lines are "+ cmd args" ("++" in a substitution); the program is the first word.
func tracedPrograms(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		rest := strings.TrimLeft(l, "+")
		if rest == l || !strings.HasPrefix(rest, " ") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || strings.Contains(f[0], "=") || f[0] == "[[" || f[0] == "((" || f[0] == "case" {
			continue
		}
		out = append(out, strings.Trim(f[0], "'"))
	}
	return out
}

func TestSplitMatchesBash(t *testing.T) {
	t.Parallel()
	bashPath, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	for _, line := range bashLines {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bashPath, "--noprofile", "--norc", "-x", "-c", line)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + dir, "PS4=+ "}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		_ = cmd.Run() // programs are missing: the exit status says nothing here
		cancel()
		cmds := SplitCommand(line)
		seen := map[string]bool{}
		dark := false
		for _, c := range cmds {
			dark = dark || c.Opaque != ""
			for _, f := range c.Forms {
				if p := strings.Fields(f); len(p) > 0 {
					seen[p[0]] = true
				}
			}
		}
		for _, p := range tracedPrograms(stderr.String()) {
			if !seen[p] && !dark {
				t.Errorf("%q: bash ran %q, which approvals did not list (%+v)\n%s", line, p, cmds, stderr.String())
			}
		}
	}
}
