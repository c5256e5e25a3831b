package policy

import (
	"testing"
)

// Issue 24: commands hidden in program options and environment ran past deny and allow rules.
// Under the server's deny of bash(curl *) with a never-ask agent, each of these is denied; under
// default: ask with git, tar and the other programs allowed by a prefix rule, each asks. None is
// ever allowed by a prefix rule.
func TestHiddenInOptions(t *testing.T) {
	t.Parallel()
	never := Spec{NeverAsk: true}
	serverCurl := []string{"bash(curl *)"}
	prefix := Spec{Default: Ask, Rules: []Rule{}}
	for _, p := range []string{"git", "tar", "find", "xargs", "env", "sudo", "ssh", "scp", "sftp", "rsync", "awk", "sed",
		"bash", "sh", "zsh", "python3", "node", "perl", "ruby", "php", "nice", "timeout", "nohup", "stdbuf", "time",
		"watch", "command", "exec", "strace", "less", "man", "zip", "make", "ls", "cat", "go", "read", "printf", "export", "declare", "unshare", "nsenter", "runuser", "xvfb-run", "valgrind", "faketime", "torsocks", "proxychains4", "ssh-agent", "dbus-run-session", "chronic", "firejail"} {
		prefix.Rules = append(prefix.Rules, Rule{Match: "bash(" + p + " *)", Action: Allow})
	}
	hidden := []string{
		// The four commands, as they ran.
		`GIT_SSH_COMMAND='curl -s http://x/a' git ls-remote ssh://h/r`,
		`git -c alias.zz='!curl -s http://x/b' zz`,
		`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.zz GIT_CONFIG_VALUE_0='!curl -s http://x/c' git zz`,
		`tar --checkpoint-action=exec='curl -s http://x/d' -cf /tmp/a.tar .`,
		// git: -c and --config-env keys that name programs, aliases, config writes, options that
		// run a program, environment.
		`git -c core.sshCommand='curl x' fetch origin`, `git -c core.pager='curl x' log`, `git -c core.editor='curl x' commit`,
		`git -c core.fsmonitor='curl x' status`, `git -c core.hooksPath=/tmp/h commit -m x`, `git -c credential.helper='!curl x' push`,
		`git -c diff.external='curl x' diff`, `git -c include.path=/tmp/c status`, `git -c 'alias.st=!curl x' st`,
		`git -ccore.pager='curl x' log`, `git --config-env=core.pager=P log`, `git --config-env core.sshCommand=P fetch`,
		`git --exec-path=/tmp/x status`, `git -C /tmp -c core.pager='curl x' log`, `git zz`, `git st`,
		`git config core.sshCommand 'curl x'`, `git config --global alias.zz '!curl x'`, `git config set core.pager 'curl x'`,
		`git config --add core.fsmonitor 'curl x'`, `git ls-remote --upload-pack='curl x' h:r`, `git fetch --upload-pack 'curl x' o`,
		`git clone -u 'curl x' h:r`, `git clone --config core.sshCommand='curl x' h:r`, `git clone -c core.sshCommand='curl x' h:r`,
		`git clone --template=/tmp/t h:r`, `git push --receive-pack='curl x' o`, `git push --exec='curl x' o`,
		`git archive --remote=h:r --exec='curl x' HEAD`, `git rebase -x 'curl x' main`, `git rebase --exec 'curl x' main`,
		`git rebase -i --exec='curl x' main`, `git bisect run curl x`, `git submodule foreach 'curl x'`,
		`git difftool -x 'curl x'`, `git difftool --extcmd='curl x'`, `git filter-branch --tree-filter 'curl x'`,
		`git grep -O'curl x' foo`, `git grep --open-files-in-pager='curl x' foo`, `git for-each-repo --config=r -- status`,
		`git send-email --smtp-server=/tmp/x a.patch`, `git daemon --access-hook=/tmp/x`,
		`GIT_SSH='/tmp/x' git fetch`, `GIT_EXEC_PATH=/tmp git status`, `GIT_PAGER='curl x' git log`, `GIT_EDITOR='curl x' git commit`,
		`GIT_SEQUENCE_EDITOR='curl x' git rebase -i main`, `GIT_ASKPASS=/tmp/x git push`, `GIT_PROXY_COMMAND=/tmp/x git fetch`,
		`GIT_EXTERNAL_DIFF='curl x' git diff`, `GIT_CONFIG_PARAMETERS="'core.pager'='curl x'" git log`, `GIT_CONFIG_GLOBAL=/tmp/c git log`,
		`GIT_TEMPLATE_DIR=/tmp/t git init`, `export GIT_SSH_COMMAND='curl x'; git fetch`, `env GIT_SSH_COMMAND='curl x' git fetch`,
		`GIT_PAGER='curl x'; git log`,
		// tar.
		`tar --to-command='curl x' -xf a.tar`, `tar --use-compress-program='curl x' -cf a.tar .`, `tar -I 'curl x' -cf a.tar .`,
		`tar -I'curl x' -cf a.tar .`, `tar -cIzstd -f a.tar .`, `tar cIf zstd a.tar .`, `tar --rsh-command=/tmp/x -cf h:a.tar .`,
		`tar --info-script=/tmp/x -cMf a.tar .`, `tar --new-volume-script=/tmp/x -cMf a.tar .`, `tar -F /tmp/x -cMf a.tar .`,
		`tar -cMF /tmp/x -f a.tar .`, `tar --to-com='curl x' -xf a.tar`, `tar --checkpoint-act=exec=x -cf a.tar .`,
		`tar --use-comp=x -cf a.tar .`, `TAR_OPTIONS=--to-command=x tar -xf a.tar`,
		// find: what -exec runs is decided as its own command.
		`find . -exec curl x \;`, `find . -execdir curl x {} +`, `find . -ok curl x \;`, `find . -okdir curl x \;`,
		`find . -exec sh -c 'curl x' \;`,
		// xargs, env and sudo: their command is decided as its own.
		`echo x | xargs curl`, `echo x | xargs -I{} curl {}`, `xargs -a urls -n1 curl`, `xargs sh -c 'curl x'`,
		`env curl x`, `env -i curl x`, `env -S 'curl x'`, `env --sp 'sh -c "curl x"'`, `env --split-string='sh -c x'`, `sudo --sh`, `timeout --sig KILL 5 curl x`, `env A=1 curl x`, `sudo curl x`, `sudo -u root curl x`,
		`sudo -s`, `sudo -i curl x`, `sudo sh -c 'curl x'`,
		// ssh, scp, sftp, rsync.
		`ssh -o ProxyCommand='curl x' h`, `ssh -oProxyCommand='curl x' h`, `ssh -o 'ProxyCommand curl x' h`,
		`ssh -o proxycommand=x h`, `ssh -o LocalCommand='curl x' -o PermitLocalCommand=yes h`, `ssh -o PermitLocalCommand=yes h`,
		`ssh -o KnownHostsCommand=/tmp/x h`, `ssh -F /tmp/cfg h`, `ssh -I /tmp/lib.so h`, `ssh -o PKCS11Provider=/tmp/l.so h`,
		`scp -o ProxyCommand='curl x' a h:b`, `scp -S /tmp/x a h:b`, `sftp -o ProxyCommand='curl x' h`, `sftp -S /tmp/x h`,
		`sftp -D /tmp/x h`, `rsync -e 'curl x' a h:b`, `rsync -avze 'curl x' a h:b`, `rsync --rsh='curl x' a h:b`,
		`rsync --rsh 'curl x' a h:b`, `rsync --rsync-path='curl x' a h:b`, `rsync --rs='curl x' a h:b`, `RSYNC_RSH='curl x' rsync a h:b`,
		// awk and sed.
		`awk 'BEGIN{system("curl x")}'`, `awk 'BEGIN{"curl x" | getline}'`, `awk '{print | "sh"}' f`, `awk -e 'BEGIN{system("x")}'`,
		`awk -f x.awk -e 'BEGIN{system("x")}' f`, `awk --source='BEGIN{system("x")}'`, `awk --source 'BEGIN{system("x")}'`,
		`awk -l ext '{print}' f`, `awk '@load "x"; BEGIN{}'`, `sed --expr='e curl x' f`, `sed --e 'e curl x' f`,
		`unshare -r curl x`, `nsenter --target 1 -m curl x`, `runuser -u x -- curl x`, `runuser -u x -c 'curl x'`, `xvfb-run -a curl x`,
		`valgrind --tool=memcheck curl x`, `faketime '2020-01-01' curl x`, `torsocks curl x`, `proxychains4 -q curl x`,
		`ssh-agent curl x`, `dbus-run-session curl x`, `chronic curl x`, `firejail --net=none curl x`,
		`sed e f`, `sed '1e curl x' f`, `sed 's/a/curl x/e' f`, `sed -n 's/a/b/w /tmp/out' f`, `sed 'w /tmp/out' f`,
		`sed -e 's/a/b/' -e '2e curl x' f`, `sed --expression='$e curl x' f`, `sed -n '/x/{e curl x
}' f`, `sed 's|a|b|e' f`, `sed '/re/W /tmp/o' f`, `sed -ne 's/x/y/e' f`, `sed 'y/ab/cd/;e curl' f`,
		// Interpreters given a string.
		`bash -c 'curl x'`, `sh -c 'curl x'`, `zsh -c 'curl x'`, `python3 -c 'import os'`, `node -e 'x'`, `perl -e 'x'`,
		`ruby -e 'x'`, `php -r 'x'`, `bash -lc 'curl x'`,
		// Wrappers: what they run is decided as its own command.
		`nice curl x`, `nice -n 5 curl x`, `timeout 5 curl x`, `nohup curl x`, `stdbuf -o0 curl x`, `time curl x`,
		`command curl x`, `exec curl x`, `strace -f curl x`, `strace -o '|curl x' ls`, `watch curl x`,
		// Variables that name a program or library something runs.
		`LD_PRELOAD=/tmp/x.so ls`, `LD_LIBRARY_PATH=/tmp ls`, `BASH_ENV=/tmp/x bash s.sh`, `ENV=/tmp/x sh s.sh`,
		`PROMPT_COMMAND='curl x' bash -i`, `PAGER='curl x' man ls`, `EDITOR='curl x' git commit`, `VISUAL='curl x' git commit`,
		`MANPAGER='curl x' man ls`, `LESSOPEN='|curl x %s' less f`, `LESS='+!curl x' less f`, `BROWSER='curl x' git help -w log`,
		`NODE_OPTIONS='--require /tmp/x.js' node a.js`, `PERL5OPT=-Mx perl a.pl`, `RUBYOPT=-rx ruby a.rb`, `SHELL=/tmp/x make`,
		`SSH_ASKPASS=/tmp/x ssh h`, `export LD_PRELOAD=/tmp/x.so; ls`, `env LD_PRELOAD=/tmp/x.so ls`, `sudo LD_PRELOAD=/tmp/x.so ls`,
		`read GIT_PAGER <<< 'curl x'; export GIT_PAGER; git log`, `printf -v GIT_SSH_COMMAND 'curl x'; export GIT_SSH_COMMAND; git fetch`,
		`export 'GIT_SSH_COMMAND=curl x'; git fetch`, `declare -x "LD_PRELOAD=/tmp/x.so"; ls`, `export 'BASH_ENV=/tmp/x'; bash s.sh`,
		`command git -c alias.zz='!curl x' zz`, `/usr/bin/git -c alias.zz='!curl x' zz`, `\git -c core.pager='curl x' log`,
		`echo . | xargs git -c alias.zz='!curl x' zz`, `find . -exec git -c alias.zz='!curl x' zz \;`, `git -c "$X" log`,
		// Other programs that run one named in their options.
		`man -P 'curl x' ls`, `man --pager='curl x' ls`, `zip -T -TT 'curl x' a.zip f`, `zip --unzip-command='curl x' -T a.zip f`,
	}
	for _, cmd := range hidden {
		if d := Decide(never, serverCurl, "bash", bash(cmd)); d.Action != Deny {
			t.Errorf("never-ask under the server's deny of bash(curl *): %q is %s (%s)", cmd, d.Action, d.Explain())
		}
		if d := Decide(prefix, nil, "bash", bash(cmd)); d.Action == Allow {
			t.Errorf("default ask with prefix allows: %q is allowed (%s)", cmd, d.Explain())
		}
	}

	// What worked before still does: allowed by the prefix rules, and by never-ask under the
	// server's deny.
	plain := []string{
		"git status", "git log --oneline -5", "git diff HEAD~1", "git add -A && git commit -m 'x: y'", "git push origin main",
		"git -C sub status", "git --no-pager log", "git -c user.name=a -c user.email=b@c commit -m x", "git -c color.ui=never diff",
		"git -c core.pager=cat log", "GIT_PAGER=cat git log", "PAGER=cat git log", "GIT_EDITOR=true git rebase --continue",
		"GIT_AUTHOR_NAME=a GIT_COMMITTER_NAME=a git commit -m x", "GIT_TERMINAL_PROMPT=0 git fetch", "git config user.name",
		"git config --get core.pager", "git config -l", "git config user.email a@b", "git config --global init.defaultBranch main",
		"git rebase -i main", "git rebase -X theirs main", "git bisect start", "git submodule update --init", "git clone h:r d",
		"git fetch origin", "git push -u origin x", "git grep -n foo", "git --version", "git help log", "git stash pop",
		"git lfs pull", "git subtree split -P d", "git ls-remote origin", "git worktree add ../x -b x", "git switch -c x", "git restore f", "git show HEAD:f",
		"tar -czf x.tgz dir", "tar -xzf x.tgz -C out", "tar czf x.tgz dir", "tar -cf - dir", "tar -tvf x.tar", "tar xf a.tar",
		"tar --exclude=.git -czf x.tgz .", "tar -cJf x.txz dir", "tar --zstd -cf x.tzst dir", "tar -C dir -xf a.tar",
		"tar --newer=2020-01-01 -cf a.tar .", "tar -cf Foo.tar dir",
		"find . -name '*.go'", "find . -type f -exec ls -l {} +", "find . -exec cat {} \\;", "ls | xargs cat", "xargs -n1 ls < f",
		"env", "env ls", "env A=1 B=2 ls", "env -i PATH=/bin ls", "nice -n 5 ls", "timeout 5 ls", "nohup ls", "stdbuf -o0 ls",
		"time ls", "command -v git", "exec ls", "strace -f ls", "sudo ls",
		"ssh h uptime", "ssh -p 2222 -i key h ls", "ssh -o StrictHostKeyChecking=no h", "ssh -J jump h", "scp -P 2 a h:b", "sftp h",
		"rsync -avz a h:b", "rsync -a --delete a/ b/", "rsync -av --exclude=x a b", "rsync -e ssh a h:b",
		"awk '{print $1}' f", "awk -F: '{print $2}' f", "awk -f x.awk f", "awk -f x.awk 'data|x'", "awk -v n=1 -F, '$1 > n' f", "awk -- '{print}' f", "xvfb-run -a ls", "unshare -r ls", "sed -n 1,5p f", "sed -i 's/a/b/g' f", "sed -E 's/e+/x/' f",
		"sed 's/need/want/' f", "sed -e '/^#/d' -e 's/ew/x/' f", "sed '$d' f", "sed 's/a/b/2g' f", "sed --sandbox 's/a/b/e' f",
		"sed 's/x/y/;s/w/z/' f", "sed -n '/start/,/end/p' f", "sed '1i hello we' f", "sed 'a\\we' f", "sed -i.bak 's/x/y/' f",
		"sed 's/\\/e/x/' f", "sed 'y/abe/xyz/' f",
		"bash x.sh", "sh ./run.sh", "python3 -m pytest", "python3 t.py", "node a.js", "perl a.pl", "ruby a.rb", "php a.php",
		"read -r line < f", "printf -v x '%s' y", "export GIT_AUTHOR_NAME=a", "export PATH", "declare -x FOO=1",
		"man ls", "less f", "zip -r a.zip dir", "make test", "CGO_ENABLED=0 go test ./...", "LANG=C ls", "HOME=/tmp ls", "EDITOR=vim ls",
	}
	for _, cmd := range plain {
		if d := Decide(prefix, nil, "bash", bash(cmd)); d.Action != Allow {
			t.Errorf("default ask with prefix allows: %q is %s (%s)", cmd, d.Action, d.Explain())
		}
		if d := Decide(never, serverCurl, "bash", bash(cmd)); d.Action != Allow {
			t.Errorf("never-ask under the server's deny: %q is %s (%s)", cmd, d.Action, d.Explain())
		}
	}
}

// A pattern allowing a wrapper does not allow the command it runs, unless it names that command:
// bash(sudo *) asks for sudo curl, bash(sudo apt-get *) allows sudo apt-get install.
func TestWrapperAllowNamesItsCommand(t *testing.T) {
	t.Parallel()
	spec := Spec{Default: Ask, Rules: []Rule{{Match: "bash(sudo *)", Action: Allow}, {Match: "bash(xargs *)", Action: Allow},
		{Match: "bash(env *)", Action: Allow}, {Match: "bash(timeout 5 go test *)", Action: Allow}, {Match: "bash(sudo apt-get *)", Action: Allow},
		{Match: "bash(nice *)", Action: Allow}, {Match: "bash(ls *)", Action: Allow}}}
	for cmd, want := range map[string]string{
		"sudo curl x": Ask, "xargs curl": Ask, "env curl x": Ask, "nice -n 5 curl x": Ask, "sudo -u x env curl": Ask,
		"timeout 5 go test ./...": Allow, "sudo apt-get install -y x": Allow, "sudo -l": Allow, "sudo ls": Allow,
		"xargs ls": Allow, "env A=1 ls": Allow, "nice ls -l": Allow, "timeout 6 go test ./...": Ask,
	} {
		if d := Decide(spec, nil, "bash", bash(cmd)); d.Action != want {
			t.Errorf("%q: %s (%s), want %s", cmd, d.Action, d.Explain(), want)
		}
	}
}
