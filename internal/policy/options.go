package policy

import (
	"strings"
)

// Programs that run a command or a program named in their options or environment (git -c
// core.sshCommand=..., git's aliases, tar --to-command, ssh -o ProxyCommand, rsync -e, sed's e
// command, GIT_SSH_COMMAND=..., LD_PRELOAD=...): approvals cannot see what those run, so a command
// using one is opaque (opaque in normalize.go asks runsFromOptions; an assignment asks hiddenVar).
// Wrappers whose command is a plain word list (env, sudo, xargs, find -exec, ...) are not here:
// their command is decided as its own (normalize.go).

// hiddenVar says why assigning name=value makes a command opaque, "" if it does not: the shell
// expands or runs the value later (PS4, PROMPT_COMMAND, BASH_ENV, ...), or a program started
// from here runs the program or loads the library it names (GIT_SSH_COMMAND, GIT_CONFIG_*,
// PAGER, EDITOR, LD_PRELOAD, TAR_OPTIONS, ...). literal: the value has no expansion, so a pager
// or editor set to a plain program (cat, true, less, vim) is not opaque.
func hiddenVar(name, value string, literal bool) string {
	switch {
	case expandedLater[name]:
		return "an assignment to " + name + " (the shell expands or uses it later, which can run commands)"
	case programVars[name] && literal && plainPrograms[strings.TrimSpace(value)]:
		return ""
	case programVars[name], runVars[name], strings.HasPrefix(name, "LD_"),
		strings.HasPrefix(name, "GIT_") && !safeGitVars[name] && !strings.HasPrefix(name, "GIT_TRACE"):
		return "an assignment to " + name + " (a program started with it runs the program, options or library it names)"
	}
	return ""
}

// programVars name a pager or an editor; runVars name a program, options or code that something
// run from here uses.
var (
	programVars = setOf("PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR",
		"GIT_SEQUENCE_EDITOR", "SUDO_EDITOR", "FCEDIT")
	runVars = setOf("LESSOPEN", "LESSCLOSE", "LESS", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS", "TAR_OPTIONS",
		"RSYNC_RSH", "RSYNC_CONNECT_PROG", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "PYTHONSTARTUP", "SHELL", "MANOPT")
	// plainPrograms are pagers and editors that run nothing else.
	plainPrograms = setOf("", "cat", "true", ":", "less", "less -R", "less -FRX", "less -FRSX", "more", "vi", "vim", "nano", "emacs")
	// safeGitVars change who or where, not what runs.
	safeGitVars = setOf("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
		"GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "GIT_CURL_VERBOSE",
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
		"GIT_FLUSH", "GIT_MERGE_AUTOEDIT", "GIT_NAMESPACE", "GIT_LITERAL_PATHSPECS", "GIT_NO_REPLACE_OBJECTS",
		"GIT_DEFAULT_HASH", "GIT_REDACT_COOKIES", "GIT_SSL_NO_VERIFY", "GIT_HTTP_USER_AGENT", "GIT_CONFIG_NOSYSTEM",
		"GIT_PROGRESS_DELAY", "GIT_QUIET")
)

// setsVar are builtins that set a variable named in their arguments.
var setsVar = setOf("read", "printf", "mapfile", "readarray", "getopts")

// setsHiddenVar: an argument of read, printf -v and the like that names a variable hiddenVar
// refuses (read GIT_PAGER <<< ...; export GIT_PAGER).
func setsHiddenVar(texts []string) string {
	for _, t := range texts {
		name := strings.TrimPrefix(t, "-v")
		if why := hiddenVar(name, "", false); why != "" && validName(name) {
			return why
		}
	}
	return ""
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// runsFromOptions says what in a command's arguments names a command or program it runs, ""
// for none. prog is the program's base name.
func runsFromOptions(prog string, args []string) string {
	switch prog {
	case "git":
		return gitRuns(args)
	case "tar", "gtar", "bsdtar":
		return tarRuns(args)
	case "ssh", "scp", "sftp":
		return sshRuns(prog, args)
	case "rsync":
		return rsyncRuns(args)
	case "sed", "gsed":
		return sedRuns(args)
	case "strace", "ltrace":
		for i, a := range args {
			if (a == "-o" && i+1 < len(args) && strings.ContainsAny(args[i+1][:min(1, len(args[i+1]))], "|!")) ||
				strings.HasPrefix(a, "-o|") || strings.HasPrefix(a, "-o!") || strings.HasPrefix(a, "--output=|") || strings.HasPrefix(a, "--output=!") {
				return prog + " -o |COMMAND (it pipes its output to a command)"
			}
		}
	case "man":
		if o := longOpt(args, "pager", "html"); o != "" || hasShort(args, "PH", "") {
			return "man -P or -H (it runs the pager or browser named)"
		}
	case "zip":
		for _, a := range args {
			if a == "-TT" || strings.HasPrefix(a, "-TT") || longOpt([]string{a}, "unzip-command") != "" {
				return "zip -TT (it runs the command named to test the archive)"
			}
		}
	}
	return ""
}

// longOpt returns the first of args that is --NAME or --NAME=... for one of names, or an
// abbreviation of one (GNU getopt takes a unique prefix: --to-com for --to-command), "" if none.
func longOpt(args []string, names ...string) string {
	for _, a := range args {
		if a == "--" {
			return ""
		}
		n, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		n, _, _ = strings.Cut(n, "=")
		for _, name := range names {
			if n == name || len(n) >= 2 && strings.HasPrefix(name, n) {
				return a
			}
		}
	}
	return ""
}

// hasShort reports whether a short option in letters is given (bundled or not, -xyz), reading a
// bundle up to an option in withArg (the rest of the word is its argument).
func hasShort(args []string, letters, withArg string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			continue
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(letters, a[j]) >= 0 {
				return true
			}
			if strings.IndexByte(withArg, a[j]) >= 0 {
				break
			}
		}
	}
	return false
}

// ---- git ----

// gitCommands are git's own commands: any other name is an alias (which can be "!command") or
// a git-NAME program.
var gitCommands = setOf("add", "am", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch", "bugreport",
	"bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index",
	"cherry", "cherry-pick", "citool", "clean", "clone", "column", "commit", "commit-graph", "commit-tree", "config",
	"count-objects", "credential", "credential-cache", "credential-store", "daemon", "describe", "diagnose", "diff",
	"diff-files", "diff-index", "diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack",
	"filter-branch", "fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "gc", "get-tar-commit-id",
	"grep", "gui", "hash-object", "help", "hook", "http-backend", "index-pack", "init", "instaweb", "interpret-trailers",
	"log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge", "merge-base", "merge-file",
	"merge-index", "merge-one-file", "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv", "name-rev",
	"notes", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune", "prune-packed", "pull", "push",
	"range-diff", "read-tree", "rebase", "receive-pack", "reflog", "remote", "repack", "replace", "replay", "request-pull",
	"rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm", "send-email", "send-pack", "shortlog", "show",
	"show-branch", "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace", "submodule",
	"switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info",
	"upload-archive", "upload-pack", "var", "verify-commit", "verify-pack", "verify-tag", "version", "whatchanged",
	"worktree", "write-tree", "init-db", "lfs", "subtree")

// gitSafeKey: configuration that changes no program git runs. Any other key given with -c,
// --config-env, clone --config or written with git config may (core.sshCommand, core.pager,
// alias.*, credential.helper, include.path, *.command, filter.*, diff.external, ...).
func gitSafeKey(key, value string) bool {
	k := strings.ToLower(key)
	switch k {
	case "core.pager", "core.editor", "sequence.editor":
		return plainPrograms[strings.TrimSpace(value)]
	case "user.name", "user.email", "author.name", "author.email", "committer.name", "committer.email",
		"core.quotepath", "core.autocrlf", "core.safecrlf", "core.eol", "core.filemode", "core.ignorecase", "core.abbrev",
		"core.longpaths", "core.symlinks", "init.defaultbranch", "safe.directory", "pull.rebase", "pull.ff", "merge.ff",
		"push.default", "push.autosetupremote", "fetch.prune", "commit.gpgsign", "tag.gpgsign", "gc.auto", "rebase.autostash",
		"rebase.autosquash", "column.ui", "http.sslverify", "protocol.version", "diff.renames", "diff.noprefix",
		"merge.conflictstyle", "log.date", "log.decorate", "log.showsignature", "core.whitespace", "i18n.logoutputencoding",
		"i18n.commitencoding", "status.showuntrackedfiles", "status.short", "status.branch", "pager.branch", "pager.diff",
		"pager.log", "pager.show", "pager.status", "pager.tag", "pager.grep", "checkout.defaultremote", "branch.autosetupmerge",
		"submodule.recurse", "maintenance.auto":
		if strings.HasPrefix(k, "pager.") {
			return value == "" || value == "false" || value == "true" || plainPrograms[strings.TrimSpace(value)]
		}
		return true
	}
	return strings.HasPrefix(k, "color.") || strings.HasPrefix(k, "advice.")
}

// gitConfigArg checks a KEY=VALUE given to -c or --config (for --config-env KEY=ENVVAR, the
// value is the environment's: any key but a safe one is opaque).
func gitConfigArg(kv string, fromEnv bool) string {
	k, v, _ := strings.Cut(kv, "=")
	if fromEnv && !gitSafeKey(k, "\x00") || !fromEnv && !gitSafeKey(k, v) {
		return "git configuration " + k + " given on the command line (git runs programs its configuration names)"
	}
	return ""
}

func gitRuns(args []string) string {
	i := 0
opts:
	for ; i < len(args); i++ {
		t := args[i]
		switch {
		case t == "-c" || t == "--config-env":
			if i+1 < len(args) {
				if o := gitConfigArg(args[i+1], t == "--config-env"); o != "" {
					return o
				}
			}
			i++
		case strings.HasPrefix(t, "-c"):
			if o := gitConfigArg(t[2:], false); o != "" {
				return o
			}
		case strings.HasPrefix(t, "--config-env="):
			if o := gitConfigArg(strings.TrimPrefix(t, "--config-env="), true); o != "" {
				return o
			}
		case strings.HasPrefix(t, "--exec-path="):
			return "git --exec-path (git runs its commands from the folder named)"
		case t == "-C" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--super-prefix":
			i++
		case t == "--":
			i++
			break opts
		case strings.HasPrefix(t, "-"):
		default:
			break opts
		}
	}
	if i >= len(args) {
		return ""
	}
	sub, rest := args[i], args[i+1:]
	if !gitCommands[sub] {
		return "git " + sub + " (not a git command: an alias from git's configuration, which can be a shell command, or a git-" + sub + " program)"
	}
	runs := func(what string) string {
		return "git " + sub + " " + what + " (git runs the command or program named)"
	}
	switch sub {
	case "config":
		return gitConfigWrite(rest)
	case "clone", "init", "init-db":
		for j, a := range rest {
			if (a == "-c" || a == "--config") && j+1 < len(rest) {
				if o := gitConfigArg(rest[j+1], false); o != "" {
					return o
				}
			}
			if v, ok := strings.CutPrefix(a, "--config="); ok {
				if o := gitConfigArg(v, false); o != "" {
					return o
				}
			}
			if strings.HasPrefix(a, "-c") && len(a) > 2 && a[2] != '-' {
				if o := gitConfigArg(a[2:], false); o != "" {
					return o
				}
			}
		}
		if o := longOpt(rest, "template", "upload-pack"); o != "" {
			return runs(o)
		}
		if sub == "clone" && hasShort(rest, "u", "obcj") {
			return runs("-u")
		}
	case "fetch", "pull", "ls-remote", "fetch-pack", "archive", "push", "send-pack", "remote":
		if o := longOpt(rest, "upload-pack", "receive-pack", "exec"); o != "" {
			return runs(o)
		}
		if sub == "ls-remote" && hasShort(rest, "u", "") {
			return runs("-u")
		}
	case "rebase":
		if o := longOpt(rest, "exec"); o != "" {
			return runs(o)
		}
		if hasShort(rest, "x", "sSXCo") {
			return runs("-x")
		}
	case "bisect":
		if len(rest) > 0 && rest[0] == "run" {
			return runs("run")
		}
	case "submodule":
		for _, a := range rest {
			if a == "foreach" {
				return runs("foreach")
			}
		}
	case "difftool":
		if o := longOpt(rest, "extcmd"); o != "" {
			return runs(o)
		}
		if hasShort(rest, "x", "t") {
			return runs("-x")
		}
	case "grep":
		if o := longOpt(rest, "open-files-in-pager"); o != "" {
			return runs(o)
		}
		if hasShort(rest, "O", "efABCm") {
			return runs("-O")
		}
	case "filter-branch", "for-each-repo", "send-email", "daemon", "instaweb", "hook", "mergetool", "credential":
		return "git " + sub + " (it runs commands or programs its options or configuration name)"
	}
	return ""
}

// gitConfigWrite: git config writing a key that is not a safe one is opaque (git runs what
// core.sshCommand, alias.* and the like name, later, in any git command).
func gitConfigWrite(args []string) string {
	var pos []string
	write := false
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			pos = append(pos, args[j+1:]...)
			j = len(args)
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment" || a == "--value":
			j++
		case a == "--add" || a == "--replace-all" || a == "--append":
			write = true
		case a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "--get-urlmatch" || a == "-l" || a == "--list" ||
			a == "--unset" || a == "--unset-all" || a == "--remove-section" || a == "--rename-section" || a == "-e" || a == "--edit" ||
			a == "--get-color" || a == "--get-colorbool":
			return ""
		case strings.HasPrefix(a, "-"):
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) > 0 {
		switch pos[0] {
		case "get", "list", "unset", "edit", "rename-section", "remove-section":
			return ""
		case "set":
			pos, write = pos[1:], true
		}
	}
	if len(pos) >= 2 || write && len(pos) >= 1 {
		v := ""
		if len(pos) >= 2 {
			v = pos[1]
		}
		if !gitSafeKey(pos[0], v) {
			return "git config writing " + pos[0] + " (git runs programs its configuration names)"
		}
	}
	return ""
}

// ---- tar ----

// tarRuns: --checkpoint-action, --to-command, --use-compress-program (-I), --rsh-command,
// --rmt-command, --info-script / --new-volume-script (-F) run a command.
func tarRuns(args []string) string {
	if o := longOpt(args, "checkpoint-action", "to-command", "use-compress-program", "rsh-command", "rmt-command",
		"info-script", "new-volume-script"); o != "" {
		return "tar " + strings.SplitN(o, "=", 2)[0] + " (it runs the command named)"
	}
	// Short options that take an argument end a bundle (-fI is the file I).
	const withArg = "bCfgHKLNTVX"
	if hasShort(args, "IF", withArg) {
		return "tar -I or -F (it runs the command named)"
	}
	// The traditional form: the first word is a bundle without a dash (tar cIf zstd a.tar).
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && strings.ContainsAny(args[0], "IF") && isLetters(args[0]) {
		return "tar -I or -F (it runs the command named)"
	}
	return ""
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// ---- ssh, scp, sftp, rsync ----

// sshOptions run a local command or load a library.
var sshOptions = []string{"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "pkcs11provider",
	"securitykeyprovider", "remotecommand", "include", "match"}

func sshRuns(prog string, args []string) string {
	for j, a := range args {
		var opt string
		switch {
		case a == "--":
			return ""
		case a == "-o" && j+1 < len(args):
			opt = args[j+1]
		case strings.HasPrefix(a, "-o"):
			opt = a[2:]
		}
		if opt != "" {
			key := strings.ToLower(strings.TrimSpace(strings.FieldsFunc(opt, func(r rune) bool { return r == '=' || r == ' ' || r == '\t' })[0]))
			for _, o := range sshOptions {
				if key == o {
					return prog + " -o " + key + " (it runs the command or loads the library named)"
				}
			}
		}
	}
	// -F reads a configuration that can name commands, -I loads a library; scp and sftp -S (and
	// sftp -D) run the program named.
	letters, withArg := "FI", "bcDeiJlLmOopQRwWEBP"
	if prog != "ssh" {
		letters, withArg = "FSD", "cilPoJX"
		if prog == "scp" {
			letters = "FS"
		}
	}
	if hasShort(args, letters, withArg) {
		return prog + " -" + letters + " (it reads a configuration naming commands, runs a program or loads a library)"
	}
	return ""
}

func rsyncRuns(args []string) string {
	for j, a := range args {
		if a == "--" {
			return ""
		}
		v, named := "", ""
		switch {
		case a == "-e" && j+1 < len(args):
			v, named = args[j+1], "-e"
		case strings.HasPrefix(a, "-e") && len(a) > 2:
			v, named = a[2:], "-e"
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "e"):
			// a bundle: -avze 'cmd' or -avzessh
			k := strings.IndexByte(a, 'e')
			if strings.ContainsAny(a[1:k], "BfTMd") {
				continue // an earlier option takes the rest as its argument
			}
			if v, named = a[k+1:], "-e"; v == "" && j+1 < len(args) {
				v = args[j+1]
			}
		case longOpt([]string{a}, "rsh", "rsync-path", "rsync-command", "remote-option", "early-input") != "":
			return "rsync " + strings.SplitN(a, "=", 2)[0] + " (it runs the command named)"
		}
		if named != "" && !plainSSH(v) {
			return "rsync " + named + " (it runs the command named as its remote shell)"
		}
	}
	return ""
}

// plainSSH: a remote shell that is ssh with a port or a key, nothing that runs more.
func plainSSH(v string) bool {
	f := strings.Fields(v)
	if len(f) == 0 || f[0] != "ssh" {
		return false
	}
	for i := 1; i < len(f); i++ {
		switch f[i] {
		case "-p", "-i", "-l":
			i++
		case "-4", "-6", "-C", "-q", "-v", "-T", "-x", "-a":
		default:
			return false
		}
	}
	return true
}

// ---- sed ----

// sedRuns: sed's e command and s///e flag run a command; its w and W commands and s///w flag
// write a file named in the script. --sandbox refuses all of them.
func sedRuns(args []string) string {
	var scripts []string
	explicit := false
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--sandbox":
			return ""
		case a == "--":
			if !explicit && j+1 < len(args) {
				scripts = append(scripts, args[j+1])
			}
			j = len(args)
		case strings.HasPrefix(a, "--"):
			// GNU getopt takes a unique prefix: --expr= is --expression=.
			name, val, hasVal := strings.Cut(a[2:], "=")
			switch {
			case name != "" && strings.HasPrefix("expression", name):
				if !hasVal && j+1 < len(args) {
					j++
					val = args[j]
				}
				scripts, explicit = append(scripts, val), true
			case len(name) > 1 && strings.HasPrefix("file", name):
				explicit = true
				if !hasVal {
					j++
				}
			case len(name) > 0 && strings.HasPrefix("line-length", name) && !hasVal:
				j++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k := 1; k < len(a); k++ {
				c := a[k]
				if c == 'e' || c == 'f' || c == 'l' {
					explicit = explicit || c != 'l'
					v := a[k+1:]
					if v == "" && j+1 < len(args) {
						j++
						v = args[j]
					}
					if c == 'e' {
						scripts = append(scripts, v)
					}
					break
				}
				if c == 'i' {
					break // -i[SUFFIX]
				}
			}
		default:
			if !explicit && len(scripts) == 0 {
				scripts = append(scripts, a)
				explicit = true
			}
		}
	}
	for _, s := range scripts {
		if o := sedScript(s); o != "" {
			return o
		}
	}
	return ""
}

// sedScript reads a sed script's commands (addresses, s and y with any delimiter, text and
// label arguments) and names the first that runs a command or writes a file.
func sedScript(s string) string {
	i := 0
	skipRE := func(d byte) { // from after an opening delimiter to after the closing one
		for i < len(s) && s[i] != d && s[i] != '\n' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		i++
	}
	toEOL := func() {
		for i < len(s) && s[i] != '\n' {
			i++
		}
	}
	address := func() {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && s[i] == '/':
			i++
			skipRE('/')
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			skipRE(d)
		}
	}
	for i < len(s) {
		for i < len(s) && strings.IndexByte(" \t\n;{}!", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			break
		}
		address()
		if i < len(s) && s[i] == ',' {
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			address()
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '!') {
			i++
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		i++
		switch c {
		case 'e':
			return "sed's e command (it runs a command)"
		case 'w', 'W':
			return "sed's " + string(c) + " command (it writes the file named)"
		case 's':
			if i >= len(s) {
				return ""
			}
			d := s[i]
			i++
			skipRE(d) // the pattern
			skipRE(d) // the replacement
			for i < len(s) && strings.IndexByte(";\n}", s[i]) < 0 {
				switch s[i] {
				case 'e':
					return "sed's s///e (it runs the pattern space as a command)"
				case 'w':
					return "sed's s///w (it writes the file named)"
				}
				i++
			}
		case 'y':
			if i >= len(s) {
				return ""
			}
			d := s[i]
			i++
			skipRE(d)
			skipRE(d)
		case 'a', 'i', 'c', 'r', 'R', '#', 'b', 't', 'T', ':':
			if c == 'b' || c == 't' || c == 'T' || c == ':' {
				for i < len(s) && strings.IndexByte(";\n}", s[i]) < 0 {
					i++
				}
				continue
			}
			toEOL()
		}
	}
	return ""
}
