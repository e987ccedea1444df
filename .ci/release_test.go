// SPDX-License-Identifier: MIT

// The test of .ci/release, as .ci/run runs it from .ci:
//
//	go test -count=1 -v release_test.go
//
// It tries the working tree's .ci/release in a scratch clone of the working
// tree's files, whose remote is a bare repository the test makes, with a git
// identity of its own and no global or system configuration, so no signing
// or hooks of the machine. It never runs CI: it writes the record that a
// passing .ci/run leaves, for each commit it releases. It needs apidiff and
// gorelease, which .ci/run installs.
package ci_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRelease(t *testing.T) {
	dir := t.TempDir()
	remote, work := filepath.Join(dir, "remote.git"), filepath.Join(dir, "work")
	env := []string{
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null",
		"GIT_AUTHOR_NAME=Release Test", "GIT_AUTHOR_EMAIL=release@example.com",
		"GIT_COMMITTER_NAME=Release Test", "GIT_COMMITTER_EMAIL=release@example.com",
	}
	for _, v := range os.Environ() {
		if !strings.HasPrefix(v, "GIT_") {
			env = append(env, v)
		}
	}
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(dir string, args ...string) string {
		t.Helper()
		out, err := run(dir, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	// passed writes the record of a .ci/run that passed on HEAD.
	passed := func() {
		t.Helper()
		gitDir := strings.TrimSpace(must(work, "git", "rev-parse", "--path-format=absolute", "--git-common-dir"))
		head := strings.TrimSpace(must(work, "git", "rev-parse", "HEAD"))
		must(work, "mkdir", "-p", gitDir+"/ci-passed")
		must(work, "touch", gitDir+"/ci-passed/"+head)
	}
	// commit changes a file of the clone with edit, commits and pushes it.
	commit := func(file, message string, edit func(string) string) {
		t.Helper()
		name := filepath.Join(work, file)
		text, err := os.ReadFile(name)
		if err == nil {
			err = os.WriteFile(name, []byte(edit(string(text))), 0o666)
		}
		if err != nil {
			t.Fatal(err)
		}
		must(work, "git", "commit", "-q", "-a", "-m", message)
		must(work, "git", "push", "-q", "origin", "main")
	}

	// The scratch clone starts from the working tree's files, uncommitted
	// changes included, as one commit on main.
	seed := filepath.Join(dir, "seed")
	must(dir, "git", "init", "-q", "--template=", "-b", "main", seed)
	files := must("..", "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, f := range strings.Split(strings.TrimSuffix(files, "\x00"), "\x00") {
		if _, err := os.Stat(filepath.Join("..", f)); err == nil {
			must("..", "cp", "--parents", "-p", f, seed)
		}
	}
	must(seed, "git", "add", "-A")
	must(seed, "git", "commit", "-q", "-m", "the working tree")
	must(dir, "git", "init", "-q", "--template=", "--bare", "-b", "main", remote)
	must(seed, "git", "push", "-q", remote, "main")
	must(dir, "git", "clone", "-q", "--template=", remote, work)

	// refused runs .ci/release version and wants it refused for reason,
	// after printing each line of before.
	refused := func(name, version, reason string, before ...string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			out, err := run(work, ".ci/release", version)
			t.Log(out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:])
			for _, want := range append(before, "release: refused: "+reason) {
				if err == nil || !strings.Contains(out, want) {
					t.Errorf(".ci/release %s = %v, %q; want %q", version, err, out, want)
				}
			}
		})
	}
	released := func(version string) {
		t.Helper()
		t.Run("tags "+version, func(t *testing.T) {
			out, err := run(work, ".ci/release", version)
			t.Log(strings.TrimSpace(out))
			if err != nil || !strings.Contains(out, "\tgit push origin "+version+"\n") {
				t.Fatalf(".ci/release %s = %v; want the tag and the push command:\n%s", version, err, out)
			}
			if kind, _ := run(work, "git", "cat-file", "-t", version); kind != "tag\n" {
				t.Errorf("git cat-file -t %s = %q, want an annotated tag", version, kind)
			}
			if tags, _ := run(remote, "git", "tag"); tags != "" {
				t.Errorf("the remote has tags %q; want none pushed", tags)
			}
		})
	}

	refused("a version that is not semantic", "v1.0", "v1.0 is not a semantic version")
	refused("a commit without a passing .ci/run", "v1.0.0", "no record that .ci/run passed")
	passed()
	must(work, "touch", "stray")
	refused("a tree with an untracked file", "v1.0.0", "the tree is not clean")
	must(work, "rm", "stray")
	refused("v2.0.0, a new major version", "v2.0.0", "v2.0.0 is not major version 1")
	released("v1.0.0")
	refused("a version already tagged", "v1.0.0", "v1.0.0 is already tagged")
	refused("v0.9.0, an older major version", "v0.9.0", "v0.9.0 is not major version 1")
	refused("a prerelease of v1.0.0, below it", "v1.0.0-rc.1", "v1.0.0-rc.1 is not above every tag")

	commit("README.md", "Change no API", func(s string) string { return s + "\nA line.\n" })
	passed()
	released("v1.0.1")

	// A new function, recorded: a patch refuses it, a minor takes it.
	commit("permanent.go", "Add Extra", func(s string) string { return s + "\n// Extra is new.\nfunc Extra() {}\n" })
	commit(".ci/api.txt", "Record Extra", func(s string) string {
		lines := append(strings.Split(strings.TrimSuffix(s, "\n"), "\n"), "pkg github.com/bfc42b4f/retry, func Extra()")
		slices.Sort(lines)
		return strings.Join(lines, "\n") + "\n"
	})
	passed()
	refused("a patch that adds to the API", "v1.0.2", "the API check failed for a patch",
		"- Extra: added\n", "changed since v1.0.1: a patch release changes no API\n")
	released("v1.1.0")

	must(work, "git", "checkout", "-q", "--detach")
	refused("a detached HEAD", "v1.1.1", "HEAD is not the branch main")
	must(work, "git", "checkout", "-q", "main")
	must(work, "git", "commit", "-q", "--allow-empty", "-m", "Unpushed")
	refused("a commit not pushed", "v1.1.1", "HEAD is not origin's main")
	must(dir, "git", "clone", "-q", "--depth=1", "file://"+remote, "shallow")
	work = filepath.Join(dir, "shallow")
	refused("a shallow clone", "v1.1.1", "a shallow clone")
}
