// SPDX-License-Identifier: MIT

//go:build ignore

// Mutate is the mutation check of .ci/run. It changes the package's source
// files one token at a time and runs the tests against each change, the
// mutant, to ask whether some test fails. A mutant that compiles and passes
// every test lives: no test pins what the changed token does.
//
// It changes every comparison, arithmetic, shift and logical operator, each
// !, ++ and --, true and false, and each integer literal (by ±1), in the
// package's three source files. A mutant that cannot be told apart from the
// package by any test is equivalent; equivalents are listed in a file, one
// per line, as four tab-separated fields: the file, its source line before
// and after the change (both trimmed of leading white space), and the reason
// the change cannot be observed. A line number would break with every edit
// elsewhere; the line's text does not.
//
// Changes that no single token makes, such as a call left out or max(h, d)
// for h + d, are listed by hand in a second file, in the same form: the
// file, the line as it is and as it becomes (empty to delete it), and what
// the change breaks. The line as it is must stand once in the file, so a
// change to a line that repeats is written on a line next to it: a
// comment becomes "continue" to skip the check below it. Each must be
// killed, unless the file of equivalent mutants lists it too: a change no
// single token makes can be one that no test can observe.
//
// Run from the repository root:
//
//	go run .ci/mutate.go
//
// It exits 1 if a mutant that is not listed lives, if a listed one is killed
// or no longer exists (the list is stale), if a by-hand one that is not
// listed is not killed or its line is gone, or if the tests fail unmutated.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/scanner"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	listFile = flag.String("equivalent", ".ci/mutants-equivalent.txt", "the list of equivalent mutants")
	handFile = flag.String("byhand", ".ci/mutants-by-hand.txt", "the list of mutants written by hand")
	timeout  = flag.Duration("timeout", 30*time.Second, "the longest one test run of a mutant may take")
	workers  = flag.Int("workers", 2, "mutants tested at once")
	skip     = flag.String("skip", "^ExampleDo_retryAfter$", "tests not run for each mutant, as go test -skip takes them")
)

// sources are the files mutated: the package, not its tests.
var sources = []string{"retry.go", "policy.go", "permanent.go"}

// swaps maps an operator to what it is changed into.
var swaps = map[token.Token][]string{
	token.EQL: {"!="}, token.NEQ: {"=="},
	token.LSS: {"<=", ">="}, token.LEQ: {"<", ">"},
	token.GTR: {">=", "<="}, token.GEQ: {">", "<"},
	token.ADD: {"-"}, token.SUB: {"+"}, token.MUL: {"/"}, token.QUO: {"*"}, token.REM: {"*"},
	token.SHL: {">>"}, token.SHR: {"<<"},
	token.ADD_ASSIGN: {"-="}, token.SUB_ASSIGN: {"+="},
	token.LAND: {"||"}, token.LOR: {"&&"},
	token.NOT: {""}, token.INC: {"--"}, token.DEC: {"++"},
}

// A mutant is one source file with one token changed.
type mutant struct {
	file     string
	line     int
	from, to string // the trimmed source line before and after the change
	src      []byte // the whole mutated file
	byHand   bool   // from the by-hand list, so it must compile and die
}

func (m mutant) key() string { return m.file + "\t" + m.from + "\t" + m.to }

func main() {
	flag.Parse()
	log := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	equivalent, err := readList(*listFile)
	if err != nil {
		fail(err)
	}
	var mutants []mutant
	for _, f := range sources {
		ms, err := mutate(f)
		if err != nil {
			fail(err)
		}
		mutants = append(mutants, ms...)
	}
	byHand, err := readList(*handFile)
	if err != nil {
		fail(err)
	}
	for _, key := range slices.Sorted(maps.Keys(byHand)) {
		m, err := handMutant(key)
		if err != nil {
			fail(fmt.Errorf("%s: %v", *handFile, err))
		}
		mutants = append(mutants, m)
	}
	dirs := make([]string, *workers)
	for i := range dirs {
		if dirs[i], err = copyModule(); err != nil {
			fail(err)
		}
		defer os.RemoveAll(dirs[i])
	}
	if out, err := test(dirs[0]); err != nil {
		fail(fmt.Errorf("the tests fail before any mutation:\n%s", out))
	}

	results := make([]string, len(mutants))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for _, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = run(dir, mutants[i])
			}
		}()
	}
	for i := range mutants {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	count := map[string]int{}
	bad := 0
	for i, m := range mutants {
		r := results[i]
		_, listed := equivalent[m.key()]
		delete(equivalent, m.key())
		switch {
		case r == "lived" && listed:
			r = "equivalent"
		case m.byHand && r != "killed":
			r += ", but written by hand to be killed"
			bad++
		case r == "lived":
			bad++
		case listed:
			r += ", but listed as equivalent"
			bad++
		}
		count[strings.SplitN(r, ",", 2)[0]]++
		log("%-12s %s:%d: %s  =>  %s", r, m.file, m.line, m.from, m.to)
	}
	for k := range equivalent {
		log("stale entry in %s, no such mutant: %q", *listFile, k)
		bad++
	}
	log("\n%d mutants (%d by hand): %d killed, %d not compiling, %d equivalent (listed), %d lived",
		len(mutants), len(byHand), count["killed"], count["no-compile"], count["equivalent"], count["lived"])
	if bad > 0 {
		log("FAIL: %d problems: mutants that lived unlisted, by-hand mutants not killed, or stale entries", bad)
		os.Exit(1)
	}
	log("ok: every mutant that compiles is killed or listed as equivalent")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}

// readList reads the equivalent mutants, keyed as mutant.key.
func readList(name string) (map[string]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list := map[string]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 || fields[3] == "" {
			return nil, fmt.Errorf("%s:%d: want file, line before, line after and reason, tab-separated", name, n)
		}
		list[strings.Join(fields[:3], "\t")] = fields[3]
	}
	return list, s.Err()
}

// mutate returns every mutant of the Go file name.
func mutate(name string) ([]mutant, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	file := fset.AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var ms []mutant
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		text, tos := tok.String(), swaps[tok]
		switch {
		case tok == token.INT:
			v, err := strconv.ParseInt(lit, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", fset.Position(pos), err)
			}
			text, tos = lit, []string{strconv.FormatInt(v+1, 10), strconv.FormatInt(v-1, 10)}
		case tok == token.IDENT && (lit == "true" || lit == "false"):
			text, tos = lit, []string{strconv.FormatBool(lit != "true")}
		}
		off := file.Offset(pos)
		for _, to := range tos {
			m := mutant{file: name, line: fset.Position(pos).Line}
			m.src = append(append(append([]byte{}, src[:off]...), to...), src[off+len(text):]...)
			m.from, m.to = lineAt(src, off), lineAt(m.src, off)
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// handMutant returns the mutant that a line of the by-hand list describes,
// keyed as mutant.key: the one line of the file that reads as before, trimmed,
// changed to read as after.
func handMutant(key string) (mutant, error) {
	fields := strings.Split(key, "\t")
	name, before, after := fields[0], fields[1], fields[2]
	src, err := os.ReadFile(name)
	if err != nil {
		return mutant{}, err
	}
	lines := strings.SplitAfter(string(src), "\n")
	found := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == before {
			if found >= 0 {
				return mutant{}, fmt.Errorf("%s: %q stands on more than one line", name, before)
			}
			found = i
		}
	}
	if found < 0 {
		return mutant{}, fmt.Errorf("%s: no line reads %q", name, before)
	}
	l := lines[found]
	lines[found] = l[:strings.Index(l, before)] + after + l[strings.Index(l, before)+len(before):]
	return mutant{file: name, line: found + 1, from: before, to: after, src: []byte(strings.Join(lines, "")), byHand: true}, nil
}

// lineAt returns the line of src that holds offset off, trimmed.
func lineAt(src []byte, off int) string {
	start := strings.LastIndexByte(string(src[:off]), '\n') + 1
	end := strings.IndexByte(string(src[off:]), '\n')
	if end < 0 {
		end = len(src) - off
	}
	return strings.TrimSpace(string(src[start : off+end]))
}

// copyModule copies the module's top-level files to a new directory.
func copyModule() (string, error) {
	dir, err := os.MkdirTemp("", "mutate")
	if err != nil {
		return "", err
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		return "", err
	}
	for _, name := range append(names, "go.mod") {
		b, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// run tests mutant m in dir and says what became of it: killed, lived or
// no-compile. It puts the file back as it was afterwards.
func run(dir string, m mutant) string {
	path := filepath.Join(dir, m.file)
	orig, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	defer os.WriteFile(path, orig, 0o644)
	if err := os.WriteFile(path, m.src, 0o644); err != nil {
		fail(err)
	}
	if out, err := goCmd(dir, "build", "."); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fail(fmt.Errorf("go build timed out:\n%s", out))
		}
		return "no-compile"
	}
	if _, err := test(dir); err != nil {
		return "killed" // a failure, a panic or a timeout: some test noticed
	}
	return "lived"
}

// test runs the package's tests in dir, but those skipped by -skip.
func test(dir string) ([]byte, error) {
	return goCmd(dir, "test", "-vet=off", "-count=1", "-failfast", "-timeout", timeout.String(), "-skip", *skip, ".")
}

func goCmd(dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return out, err
}
