// SPDX-License-Identifier: MIT

//go:build ignore

// Quickstart checks the README's quick start, as .ci/run calls it from the
// repository root:
//
//	go run .ci/quickstart.go
//
// It takes the Go block under "## Quick start" from README.md and checks
// that each function in it but main stands, to the letter and with its doc
// comment, in example_test.go, where the tests run it. Then it pastes the
// block into main.go of a new module that points at this repository with a
// replace, vets and builds it, and runs it against a local server: one that
// answers 503 with Retry-After: 1, then 429 with a Retry-After HTTP-date,
// then 200; and one that answers 404. It exits 1 on the first thing that
// is not as the README says.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	if err := check(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Println("ok: the README's quick start matches example_test.go, builds as pasted, and does what it says")
}

func check() error {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return err
	}
	block, err := quickStart(string(readme))
	if err != nil {
		return err
	}
	if err := sameFuncs(block, "example_test.go"); err != nil {
		return err
	}
	bin, err := build(block)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(bin))
	if err := runRetries(bin); err != nil {
		return err
	}
	return runNotFound(bin)
}

// quickStart returns the first Go block after the heading "## Quick start".
func quickStart(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		return "", errors.New(`README.md has no "## Quick start" section`)
	}
	_, after, ok = strings.Cut(after, "\n```go\n")
	if !ok {
		return "", errors.New("the quick start has no ```go block")
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		return "", errors.New("the quick start's ```go block does not end")
	}
	return block + "\n", nil
}

// sameFuncs checks that every function of block but main stands in the Go
// file name with the same text, doc comment included.
func sameFuncs(block, name string) error {
	want, err := funcs("README.md", []byte(block))
	if err != nil {
		return err
	}
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	have, err := funcs(name, src)
	if err != nil {
		return err
	}
	delete(want, "main")
	if len(want) == 0 {
		return errors.New("the quick start declares no function but main")
	}
	for f, text := range want {
		switch {
		case have[f] == "":
			return fmt.Errorf("%s has no func %s, which the README's quick start has", name, f)
		case have[f] != text:
			return fmt.Errorf("func %s differs between the README's quick start and %s:\nREADME:\n%s\n%s:\n%s", f, name, text, name, have[f])
		}
	}
	return nil
}

// funcs returns the text of each top-level function in src, with its doc.
func funcs(name string, src []byte) (map[string]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, d := range file.Decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Recv == nil {
			start := f.Pos()
			if f.Doc != nil {
				start = f.Doc.Pos()
			}
			m[f.Name.Name] = string(src[fset.Position(start).Offset:fset.Position(f.End()).Offset])
		}
	}
	return m, nil
}

// build pastes block into main.go of a new module that requires this
// repository through a replace, vets it and builds it, and returns the
// program's path.
func build(block string) (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "quickstart")
	if err != nil {
		return "", err
	}
	gomod := "module example.com/quickstart\n\ngo 1.25\n\n" +
		"require github.com/bfc42b4f/retry v0.0.0\n\n" +
		"replace github.com/bfc42b4f/retry => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(block), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"vet", "."}, {"build", "-o", "quickstart", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s of the quick start as pasted: %v\n%s", args[0], err, out)
		}
	}
	return filepath.Join(dir, "quickstart"), nil
}

// runRetries runs the program against a server that answers 503 with
// Retry-After: 1, then 429 with a Retry-After HTTP-date 2s ahead, then 200,
// and checks that it prints the body after 3 calls, having waited at least
// what both headers asked: 1s, then more than 1s (an HTTP-date counts whole
// seconds).
func runRetries(bin string) error {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "hello")
		}
	}))
	defer srv.Close()
	start := time.Now()
	stdout, stderr, err := run(bin, srv.URL)
	elapsed := time.Since(start)
	if err != nil || stdout != "hello\n" || calls.Load() != 3 || elapsed < 2*time.Second {
		return fmt.Errorf("against 503, 429, 200: the program printed %q and %q, exit %v, after %d calls and %v; want \"hello\\n\", exit 0, after 3 calls and at least 2s",
			stdout, stderr, err, calls.Load(), elapsed)
	}
	return nil
}

// runNotFound runs the program against a server that answers 404, and
// checks that it gives up after one call and says why.
func runNotFound(bin string) error {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	stdout, stderr, err := run(bin, srv.URL)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout != "" || stderr != "HTTP 404\n" || calls.Load() != 1 {
		return fmt.Errorf("against 404: the program printed %q and %q, exit %v, after %d calls; want \"HTTP 404\\n\" on stderr, exit 1, after 1 call",
			stdout, stderr, err, calls.Load())
	}
	return nil
}

// run runs bin with args and returns what it printed.
func run(bin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
